package live

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/proc"
)

const codexSource = "codex"

// codexRig is one private Codex install: CODEX_HOME, a project dir, a
// scripted Responses API server and a bridge watching the home. daemon
// says whether the TUI runs its agent in the shared background daemon
// (Codex's default) or in its own process (--no-daemon).
type codexRig struct {
	t      *testing.T
	cli    agentCLI
	bin    string
	home   string
	codex  string // CODEX_HOME
	cwd    string
	tmp    string // TMPDIR: the daemon's socket directory is private to the rig
	daemon bool
	model  *modelServer
	bridge *bridge
}

func newCodexRig(t *testing.T, c agentCLI, daemon bool, bridgeEnv ...string) *codexRig {
	t.Helper()
	enabled(t)
	bin := install(t, c)
	// The npm package's command is a Node wrapper that spawns the native
	// binary; run the native one, so that the terminal's process is Codex.
	root := filepath.Dir(filepath.Dir(bin))
	if native, _ := filepath.Glob(filepath.Join(root, "@openai", "codex-linux-*", "vendor", "*", "bin", "codex")); len(native) == 1 {
		bin = native[0]
	}
	dir := t.TempDir()
	r := &codexRig{t: t, cli: c, bin: bin, home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "project"),
		tmp: filepath.Join(dir, "tmp"), daemon: daemon}
	r.codex = filepath.Join(r.home, ".codex")
	for _, d := range []string{r.codex, r.cwd, r.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A git repository, so that Codex trusts the project without asking.
	exec.Command("git", "init", "-q", r.cwd).Run()
	r.model = newModelServer(t, responsesAPI{})
	cfg := fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false
thread_unload_delay_secs = 2

[model_providers.mock]
name = "mock"
base_url = "%s/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[projects.%q]
trust_level = "trusted"

[analytics]
enabled = false

[notice]
hide_full_access_warning = true
`, r.model.URL, r.cwd)
	if err := os.WriteFile(filepath.Join(r.codex, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.killDaemons)
	keepHome(t, r.codex)
	r.bridge = startBridge(t, r.home, bridgeEnv...)
	return r
}

func (r *codexRig) env() []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + r.home,
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
		"SHELL=/bin/bash",
		"TMPDIR=" + r.tmp,
		"CODEX_HOME=" + r.codex,
		"MOCK_API_KEY=dummy",
		"RUST_LOG=error",
	}
}

// tui starts the interactive Codex in tmux and waits for its input box.
func (r *codexRig) tui(args ...string) *terminal {
	r.t.Helper()
	argv := []string{r.bin}
	if !r.daemon {
		argv = append(argv, "--no-daemon")
	}
	argv = append(argv, args...)
	term := openTerminal(r.t, r.cwd, r.env(), argv...)
	term.AwaitScreen(60*time.Second, "mock-model")
	return term
}

// daemons lists the processes of this rig's Codex daemon (an app-server
// whose CODEX_HOME is the rig's).
func (r *codexRig) daemons() []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !bytes.Contains(cmd, []byte("app-server")) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if bytes.Contains(env, []byte("CODEX_HOME="+r.codex+"\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

func (r *codexRig) killDaemons() {
	for _, pid := range r.daemons() {
		syscall.Kill(pid, syscall.SIGKILL)
		awaitGone(pid, 5*time.Second)
	}
}

// rollouts lists the rollout files.
func (r *codexRig) rollouts() []string {
	files, _ := filepath.Glob(filepath.Join(r.codex, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	return files
}

// describeRollouts condenses the rollouts to their record types.
func (r *codexRig) describeRollouts() string {
	var b strings.Builder
	for _, f := range r.rollouts() {
		data, _ := os.ReadFile(f)
		b.WriteString("rollout " + filepath.Base(f) + ":\n")
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			typ, sub := field(line, `"type":"`), ""
			if i := strings.Index(line, `"payload":{"type":"`); i >= 0 {
				sub = field(line[i:], `"type":"`)
			}
			b.WriteString("  " + typ + " " + sub + "\n")
		}
	}
	return b.String()
}

func field(s, key string) string {
	i := strings.Index(s, key)
	if i < 0 {
		return ""
	}
	s = s[i+len(key):]
	if j := strings.IndexByte(s, '"'); j >= 0 {
		return s[:j]
	}
	return s
}

func (r *codexRig) checkf(ok bool, format string, args ...any) {
	r.t.Helper()
	if !ok {
		r.t.Fatalf(format+"\n%s\nmodel requests:\n%s", append(args, r.describeRollouts(), r.model.Log())...)
	}
}

func (r *codexRig) session(timeout time.Duration, pred func(snapshot) bool) snapshot {
	r.t.Helper()
	return r.bridge.AwaitOne("one codex session", codexSource, timeout, pred)
}

func TestCodex(t *testing.T) {
	enabled(t)
	for _, c := range codexCLIs {
		for _, daemon := range []bool{true, false} {
			mode := "daemon"
			if !daemon {
				mode = "no-daemon"
			}
			col := c.Label() + " (" + mode + ")"
			t.Run(c.Version+"/"+mode, func(t *testing.T) {
				scenario(t, col, "prompt answered", func(t *testing.T) { codexPrompt(t, c, daemon) })
				if daemon {
					notApplicable(col, "prompt answered (headless)")
				} else {
					// codex exec runs its agent in its own process.
					scenario(t, col, "prompt answered (headless)", func(t *testing.T) { codexExec(t, c) })
				}
				scenario(t, col, "approval: approve", func(t *testing.T) { codexApproval(t, c, daemon, true) })
				scenario(t, col, "approval: deny", func(t *testing.T) { codexApproval(t, c, daemon, false) })
				scenario(t, col, "interrupt before output", func(t *testing.T) { codexInterrupt(t, c, daemon) })
				scenario(t, col, "subagent", func(t *testing.T) { codexSubagent(t, c, daemon) })
				scenario(t, col, "two sessions, one cwd", func(t *testing.T) { codexTwoSessions(t, c, daemon) })
				scenario(t, col, "quit, resume", func(t *testing.T) { codexResume(t, c, daemon) })
				scenario(t, col, "kill -9", func(t *testing.T) { codexKill(t, c, daemon) })
				scenario(t, col, "several turns, /exit", func(t *testing.T) { codexExit(t, c, daemon) })
				scenario(t, col, "bridge restart", func(t *testing.T) { codexRestart(t, c, daemon) })
			})
		}
	}
}

// pidOK: without the daemon the session's process is the TUI; with it,
// the daemon that hosts the thread (which TUI drives it cannot be told
// from /proc).
func (r *codexRig) pidOK(s snapshot, term *terminal) bool {
	if !r.daemon {
		return s.PID == term.PID()
	}
	for _, d := range r.daemons() {
		if s.PID == d {
			return true
		}
	}
	return false
}

func codexPrompt(t *testing.T, c agentCLI, daemon bool) {
	r := newCodexRig(t, c, daemon)
	r.model.Script(Step{Text: "Hello from the live model."})
	term := r.tui()
	prompt(term, "say hello")
	term.AwaitScreen(60*time.Second, "Hello from the live model.")
	s := r.session(20*time.Second, func(s snapshot) bool { return s.Status == "done" })
	h := r.bridge.History(codexSource, s.ID)
	r.checkf(s.LastTurn == "completed" && s.Cwd == r.cwd && s.Model == "mock-model" && r.pidOK(s, term), "done: %s", s)
	r.checkf(equal(h, []string{"idle", "running", "done"}) || equal(h, []string{"running", "done"}), "statuses %v", h)
	r.checkf(turnsStarted(r.bridge.Events(codexSource, s.ID)) == 1, "one turn: %v", r.bridge.Events(codexSource, s.ID))
	if !daemon {
		// A terminal finds the session it runs by its shell's pid (with the
		// daemon it cannot: the daemon is no descendant of the TUI).
		ids := r.bridge.SessionsOf(codexSource, "ancestorPid="+strconv.Itoa(term.PID()))
		r.checkf(equal(ids, []string{s.ID}), "ancestorPid=%d lists %v", term.PID(), ids)
	}
}

// codex exec: headless, no daemon; the process exits at the end.
func codexExec(t *testing.T, c agentCLI) {
	r := newCodexRig(t, c, false)
	r.model.Script(Step{Text: "Headless answer."})
	cmd := exec.Command(r.bin, "exec", "--skip-git-repo-check", "answer headless")
	cmd.Dir, cmd.Env = r.cwd, r.env()
	cmd.WaitDelay = 5 * time.Second
	out, err := tracked(r.t, cmd).CombinedOutput()
	r.checkf(err == nil && strings.Contains(string(out), "Headless answer."), "codex exec: %v\n%s", err, out)
	s := r.session(20*time.Second, func(s snapshot) bool { return s.Status == "exited" })
	r.checkf(s.LastTurn == "completed", "exec: %s", s)
}

// A command outside the sandbox needs approval. Codex persists nothing
// about the prompt, so the bridge shows the turn running (waiting is
// unavailable for Codex) until the decision; approving runs the command.
func codexApproval(t *testing.T, c agentCLI, daemon, approve bool) {
	r := newCodexRig(t, c, daemon)
	marker := filepath.Join(r.home, "outside-marker")
	r.model.Script(
		Step{Tool: &ToolCall{Name: "exec_command", Input: map[string]any{
			"cmd": "touch " + shellQuote(marker), "sandbox_permissions": "require_escalated", "justification": "Create the marker outside the workspace"}}},
		Step{When: "function_call_output", Text: "Finished with the file."},
	)
	term := r.tui()
	prompt(term, "make the marker")
	screen := term.AwaitScreen(60*time.Second, "Would you like to run")
	s := r.session(20*time.Second, func(s snapshot) bool { return s.Status == "running" })
	if approve {
		term.Keys("y")
		term.AwaitScreen(60*time.Second, "Finished with the file.")
		s = r.bridge.AwaitStatus(codexSource, s.ID, "done", 20*time.Second)
		_, err := os.Stat(marker)
		r.checkf(err == nil && s.LastTurn == "completed", "approved: marker %v, %s", err, s)
	} else {
		term.Keys("Escape")
		term.AwaitNoScreen(20*time.Second, "Would you like to run")
		s = r.bridge.AwaitStatus(codexSource, s.ID, "done", 30*time.Second)
		_, err := os.Stat(marker)
		r.checkf(os.IsNotExist(err), "denied: marker %v, %s\n%s", err, s, screen)
	}
}

// Escape while the model has not answered: turn_aborted, cancelled.
func codexInterrupt(t *testing.T, c agentCLI, daemon bool) {
	r := newCodexRig(t, c, daemon)
	r.model.Script(Step{Hold: true}, Step{Text: "Second answer."})
	term := r.tui()
	prompt(term, "wait for it")
	r.model.WaitHolding(60 * time.Second)
	s := r.session(20*time.Second, func(s snapshot) bool { return s.Status == "running" })
	// The TUI learns of the turn from its own events (in daemon mode, from
	// the daemon): an Escape before it shows the turn working is an Escape
	// at an idle prompt, and interrupts nothing.
	term.AwaitScreen(20*time.Second, "esc to interrupt")
	term.Keys("Escape")
	s = r.bridge.AwaitStatus(codexSource, s.ID, "done", 20*time.Second)
	r.checkf(s.LastTurn == "interrupted", "interrupted: %s", s)
	s = r.bridge.againCompletes(term, prompt, codexSource, s.ID)
}

func codexTwoSessions(t *testing.T, c agentCLI, daemon bool) {
	r := newCodexRig(t, c, daemon)
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Hold: true})
	a := r.tui()
	prompt(a, "first prompt")
	a.AwaitScreen(60*time.Second, "First answer.")
	sa := r.session(20*time.Second, func(s snapshot) bool { return s.Status == "done" })
	b := r.tui()
	prompt(b, "second prompt")
	r.model.WaitHolding(60 * time.Second)
	sb := r.session(20*time.Second, func(s snapshot) bool { return s.ID != sa.ID && s.Status == "running" })
	r.checkf(sa.Cwd == r.cwd && sb.Cwd == r.cwd && r.pidOK(sa, a) && r.pidOK(sb, b), "two sessions: %s %s", sa, sb)
	sa, _ = r.bridge.Session(codexSource, sa.ID)
	r.checkf(sa.Status == "done", "the first is untouched: %s", sa)
}

// The bridge restarts while one TUI runs and another, in the same
// directory, has quit: the restarted bridge shows the running one's
// session with the same pid (the process writing its rollout: the TUI, or
// the daemon hosting the thread) and the quit one's ended at once, never
// alive.
func codexRestart(t *testing.T, c agentCLI, daemon bool) {
	r := newCodexRig(t, c, daemon)
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Text: "Second answer."})
	a, b := r.tui(), r.tui()
	promptAnswered(a, "first prompt", "First answer.")
	sa := r.session(20*time.Second, func(s snapshot) bool { return s.Status == "done" })
	promptAnswered(b, "second prompt", "Second answer.")
	sb := r.session(20*time.Second, func(s snapshot) bool { return s.ID != sa.ID && s.Status == "done" })
	r.checkf(r.pidOK(sa, a) && r.pidOK(sb, b), "two sessions: %s %s", sa, sb)
	r.bridge.quitOne(codexSource, sa.ID, sb.ID, func() { quit(b, "/quit") })

	var wrong string
	r.bridge, wrong = r.bridge.restarted(t, r.home, codexSource, sa.ID, sa.PID, sb.ID)
	r.checkf(wrong == "", "%s", wrong)
}

// Quit ends the session (daemon mode: once the daemon unloads the thread
// and closes the rollout; never by a timer of the bridge); `codex resume`
// brings the same session back.
func codexResume(t *testing.T, c agentCLI, daemon bool) {
	// The bridge logs its process lookups and the close watch at debug
	// level: a failure shows them.
	r := newCodexRig(t, c, daemon, "AGENTBRIDGE_LOG_LEVEL=debug")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the bridge's log:\n%s", r.bridge.out)
		}
	})
	r.model.Script(Step{Text: "First answer."}, Step{Text: "Resumed answer."})
	term := r.tui()
	prompt(term, "first")
	term.AwaitScreen(60*time.Second, "First answer.")
	s := r.session(20*time.Second, func(s snapshot) bool { return s.Status == "done" })
	rollouts := r.rollouts()
	r.checkf(len(rollouts) == 1, "one rollout: %v", rollouts)
	closed := lastClose(t, rollouts[0])
	quit(term, "/quit")
	if err := r.bridge.await(20*time.Second, func() bool {
		x, ok := r.bridge.Session(codexSource, s.ID)
		if ok {
			s = x
		}
		return ok && x.Status == "exited"
	}); err != nil {
		// Whether Codex let go of the rollout (the test's own inotify
		// watch, and who holds it for writing now) tells a close the
		// bridge missed from one Codex never made.
		writers, _ := proc.FindWriters(proc.Root, rollouts[0], proc.Agent{})
		r.checkf(false, "quit: the session is not exited (%v): %s\nrollout closed at %v, its writers now %v, daemons %v\nsessions: %s",
			err, s, closed(0), writers, r.daemons(), r.bridge.dump())
	}
	seen := time.Now()
	r.checkf(s.LastTurn == "completed", "quit: %s", s)
	if daemon {
		// The daemon closes the rollout thread_unload_delay_secs after the
		// TUI left, and lives on: the end shows once it let go of the
		// rollout (no writer left when the end is seen: an end from the
		// TUI's exit would come while the daemon still writes), right
		// after that close (2 s on a quiet machine, stretched for load
		// like every bound). The test's own watch may read that close a
		// moment after the bridge reported the end: it is waited for.
		writers, _ := proc.FindWriters(proc.Root, rollouts[0], proc.Agent{})
		at := closed(2 * time.Second)
		r.checkf(len(writers) == 0 && !at.IsZero() && seen.Sub(at) < slow(2*time.Second) && len(r.daemons()) > 0,
			"exited %v after the daemon closed the rollout (closed at %v, writers when the end showed %v, daemons %v): %s",
			seen.Sub(at), at, writers, r.daemons(), s)
	}
	term2 := r.tui("resume", s.ID)
	prompt(term2, "second")
	term2.AwaitScreen(60*time.Second, "Resumed answer.")
	r.bridge.Await("the resumed session's turn", 20*time.Second, func() bool {
		x, _ := r.bridge.Session(codexSource, s.ID)
		return x.Status == "done" && r.pidOK(x, term2) && turnsStarted(r.bridge.Events(codexSource, s.ID)) == 2
	})
	r.checkf(!r.bridge.Removed(codexSource, s.ID) && len(r.bridge.Sessions(codexSource)) == 1, "resume makes no second session: %s", r.bridge.dump())
}

// Three turns, then /exit: the session shows each turn once and ends
// with the last one completed (never running again, never removed).
func codexExit(t *testing.T, c agentCLI, daemon bool) {
	r := newCodexRig(t, c, daemon)
	r.model.Script(Step{When: "first", Text: "First answer."}, Step{When: "second", Text: "Second answer."},
		Step{When: "third", Text: "Third answer."})
	term := r.tui()
	var s snapshot
	for i, p := range []string{"first", "second", "third"} {
		prompt(term, p)
		term.AwaitScreen(60*time.Second, strings.ToUpper(p[:1])+p[1:]+" answer.")
		if i == 0 {
			s = r.session(20*time.Second, func(s snapshot) bool { return s.Status == "done" })
		}
		r.bridge.Await("turn "+strconv.Itoa(i+1)+" done", 20*time.Second, func() bool {
			x, _ := r.bridge.Session(codexSource, s.ID)
			return x.Status == "done" && turnsStarted(r.bridge.Events(codexSource, s.ID)) == i+1
		})
	}
	quit(term, "/exit")
	s = r.bridge.AwaitStatus(codexSource, s.ID, "exited", 20*time.Second)
	h := r.bridge.History(codexSource, s.ID)
	r.checkf(s.LastTurn == "completed" && !r.bridge.Removed(codexSource, s.ID) && len(r.bridge.Sessions(codexSource)) == 1 &&
		turnsStarted(r.bridge.Events(codexSource, s.ID)) == 3, "after /exit: %s, events %v", s, r.bridge.Events(codexSource, s.ID))
	want := []string{"running", "done", "running", "done", "running", "done", "exited"}
	r.checkf(equal(h, want) || equal(h, append([]string{"idle"}, want...)), "statuses %v", h)
}

// kill -9 of the TUI mid-turn. Without the daemon the session exits with
// it; with the daemon the turn goes on there (Codex finishes it) and the
// session ends when the daemon unloads the thread.
func codexKill(t *testing.T, c agentCLI, daemon bool) {
	r := newCodexRig(t, c, daemon)
	r.model.Script(Step{Text: "Finished after the kill.", Delay: 2 * time.Second})
	term := r.tui()
	prompt(term, "slow answer")
	r.model.WaitTurns(1, 60*time.Second)
	s := r.session(20*time.Second, func(s snapshot) bool { return s.Status == "running" })
	if err := syscall.Kill(term.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s = r.bridge.AwaitStatus(codexSource, s.ID, "exited", 30*time.Second)
	if daemon {
		r.checkf(s.LastTurn == "completed", "the daemon finished the turn before the end: %s", s)
	}
}
