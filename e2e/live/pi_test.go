package live

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// piCLI is the pinned Pi (plain Node). It speaks OpenAI Chat Completions
// to a provider of models.json.
var piCLI = agentCLI{Agent: "pi", Pkg: "@mariozechner/pi-coding-agent", Version: "0.73.1", Bin: "pi"}

const piSource = "pi"

// piRig is one private Pi (a familyRig: a throwaway home, a project dir,
// the scripted Chat Completions server and a bridge watching the home)
// with its agent dir, ~/.pi/agent.
type piRig struct {
	*familyRig
	agent string // ~/.pi/agent
}

func newPiRig(t *testing.T) *piRig {
	t.Helper()
	enabled(t)
	r := &piRig{familyRig: newFamilyRig(t, piCLI, chatAPI{})}
	r.agent = filepath.Join(r.home, ".pi", "agent")
	if err := os.MkdirAll(r.agent, 0o700); err != nil {
		t.Fatal(err)
	}
	// PI_OFFLINE: no downloads of fd and ripgrep, no update checks.
	r.env = append(r.env, "LANG=C.UTF-8", "SHELL=/bin/bash", "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1")
	r.seed()
	return r
}

// seed writes a provider for the scripted server and makes it the
// default, with this version's changelog already seen.
func (r *piRig) seed() {
	r.writeJSON("models.json", map[string]any{"providers": map[string]any{"live": map[string]any{
		"baseUrl": r.model.URL + "/v1", "api": "openai-completions", "apiKey": "dummy",
		"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
		"models": []any{map[string]any{"id": "mock-model", "name": "Mock Model", "reasoning": false,
			"input": []string{"text"}, "contextWindow": 128000, "maxTokens": 4096}},
	}}})
	r.writeJSON("settings.json", map[string]any{
		"defaultProvider": "live", "defaultModel": "mock-model",
		"lastChangelogVersion": piCLI.Version, "quietStartup": true,
		"enableInstallTelemetry": false,
	})
}

func (r *piRig) writeJSON(name string, v any) {
	r.t.Helper()
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(filepath.Join(r.agent, name), b, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// tui starts the interactive Pi in tmux and waits for it to be ready (its
// footer names the model).
func (r *piRig) tui(args ...string) *terminal {
	r.t.Helper()
	term := openTerminal(r.t, r.cwd, r.env, append([]string{r.bin}, args...)...)
	term.AwaitScreen(60*time.Second, "mock-model")
	return term
}

// answered starts a TUI (with args), sends text, and waits for reply on
// its screen and for the bridge's session of that TUI to be done.
func (r *piRig) answered(text, reply string, args ...string) (*terminal, snapshot) {
	r.t.Helper()
	term := r.tui(args...)
	pid := term.PID()
	prompt(term, text)
	term.AwaitScreen(60*time.Second, reply)
	s := r.bridge.AwaitOne("the answered session of pid "+strconv.Itoa(pid), piSource, 20*time.Second, func(s snapshot) bool {
		return s.Status == "done" && s.PID == pid
	})
	return term, s
}

// journals lists the session journals Pi wrote.
func (r *piRig) journals() []string {
	files, _ := filepath.Glob(filepath.Join(r.agent, "sessions", "*", "*.jsonl"))
	return files
}

// checkf fails the test with the rig's journals and model log.
func (r *piRig) checkf(ok bool, format string, args ...any) {
	r.t.Helper()
	if !ok {
		var b strings.Builder
		for _, j := range r.journals() {
			data, _ := os.ReadFile(j)
			b.WriteString("journal " + filepath.Base(j) + ":\n" + string(data))
		}
		r.t.Fatalf(format+"\n%s\nmodel requests:\n%s", append(args, b.String(), r.model.Log())...)
	}
}

func TestPi(t *testing.T) {
	enabled(t)
	c := piCLI.Label()
	scenario(t, c, "prompt answered", piPrompt)
	scenario(t, c, "prompt answered (headless)", piHeadless)
	scenario(t, c, "tool call", piTool)
	// Pi runs every tool without asking: it has no approval step.
	notApplicable(c, "approval: approve")
	notApplicable(c, "approval: deny")
	scenario(t, c, "interrupt before output", piInterrupt)
	// Pi has no subagents of its own.
	notApplicable(c, "subagent")
	scenario(t, c, "two sessions, one cwd", piTwoSessions)
	scenario(t, c, "quit, resume", piResume)
	scenario(t, c, "kill -9", piKill)
	scenario(t, c, "shell escape, slash commands", piShellEscape)
	scenario(t, c, "bridge restart", piRestart)
}

// A prompt in the TUI: Pi writes its journal once the reply is complete;
// the bridge shows one completed turn with the model, cwd and title, bound
// to the TUI's process.
func piPrompt(t *testing.T) {
	r := newPiRig(t)
	r.model.Script(Step{Text: "Hello from the live model."})
	term, s := r.answered("say hello", "Hello from the live model.")
	pid := term.PID()
	r.checkf(s.LastTurn == "completed" && s.Cwd == r.cwd && s.Title == "say hello" && s.Model == "mock-model",
		"done turn: %s", s)
	h := r.bridge.History(piSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "done"}) && turnsStarted(r.bridge.Events(piSource, s.ID)) == 1,
		"one prompt, one turn: statuses %v, events %v", h, r.bridge.Events(piSource, s.ID))
	ids := r.bridge.SessionsOf(piSource, "ancestorPid="+strconv.Itoa(pid))
	r.checkf(equal(ids, []string{s.ID}), "ancestorPid=%d lists %v", pid, ids)
}

// pi -p: one completed turn; the process is gone by the time the bridge
// looks, or is found and then exits: done or exited, never running.
func piHeadless(t *testing.T) {
	r := newPiRig(t)
	r.model.Script(Step{Text: "Headless answer."})
	out := r.headless(nil, "-p", "answer headless")
	r.checkf(strings.Contains(out, "Headless answer."), "pi -p printed %q", out)
	s := r.bridge.AwaitOne("the answered session", piSource, 20*time.Second, func(s snapshot) bool {
		return s.Status == "done" || s.Status == "exited"
	})
	r.checkf(s.LastTurn == "completed" && s.Cwd == r.cwd && s.Model == "mock-model" &&
		turnsStarted(r.bridge.Events(piSource, s.ID)) == 1, "headless: %s %v", s, r.bridge.Events(piSource, s.ID))
}

// A bash tool call runs without approval: while the command runs the
// session is running with the tool open; then the tool finishes and the
// turn is done. The command waits for the test's go, so the running state
// is seen however loaded the machine is.
func piTool(t *testing.T) {
	r := newPiRig(t)
	marker, release := filepath.Join(r.cwd, "marker"), filepath.Join(r.cwd, "release")
	r.model.Script(
		Step{Text: "I will create the file.", Tool: &ToolCall{Name: "bash", Input: map[string]any{
			"command": "while [ ! -e " + release + " ]; do sleep 0.1; done; touch " + marker}}},
		Step{When: `"role":"tool"`, Text: "Finished with the file."},
	)
	term := r.tui()
	pid := term.PID()
	prompt(term, "make the marker")
	s := r.bridge.AwaitOne("the session running its tool", piSource, 60*time.Second, func(s snapshot) bool {
		return s.Status == "running" && s.PID == pid
	})
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	term.AwaitScreen(60*time.Second, "Finished with the file.")
	s = r.bridge.AwaitStatus(piSource, s.ID, "done", 20*time.Second)
	_, err := os.Stat(marker)
	r.checkf(err == nil && s.LastTurn == "completed", "tool ran: marker %v, %s", err, s)
	var kinds []string
	for _, e := range r.bridge.Events(piSource, s.ID) {
		if e.Kind != "agent.metadata" && e.Kind != "session.started" {
			kinds = append(kinds, e.Kind+":"+e.Name+e.Outcome)
		}
	}
	r.checkf(equal(kinds, []string{"turn.started:", "tool.started:bash", "tool.finished:success", "agent.done:success"}),
		"events %v", kinds)
	h := r.bridge.History(piSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "done"}), "statuses %v", h)
}

// Esc while the model has sent nothing. Pi has written nothing of a new
// session yet (it writes once the first reply is over), so the bridge
// shows nothing while the first turn runs; the Esc ends that reply with
// stopReason "aborted", which Pi writes with everything before it: the
// session appears, its turn cancelled. An Esc in a later turn ends a turn
// the bridge showed running. Each time the next prompt is a turn of its
// own that completes.
func piInterrupt(t *testing.T) {
	r := newPiRig(t)
	r.model.Script(
		Step{When: "first prompt", Hold: true},
		Step{When: "second prompt", Text: "Second answer."},
		Step{When: "third prompt", Hold: true},
		Step{When: "fourth prompt", Text: "Fourth answer."},
	)
	term := r.tui()
	pid := term.PID()
	var s snapshot
	interrupt := func(text string, whileHeld func()) {
		t.Helper()
		prompt(term, text)
		r.model.WaitHolding(60 * time.Second)
		whileHeld()
		term.Keys("Escape")
		r.model.AwaitDropped()
		term.AwaitScreen(20*time.Second, "Operation aborted")
	}
	answer := func(text, reply string) {
		t.Helper()
		prompt(term, text)
		term.AwaitScreen(60*time.Second, reply)
		r.bridge.Await("the turn after the interrupted one to complete", 20*time.Second, func() bool {
			s, _ = r.bridge.Session(piSource, s.ID)
			return s.Status == "done" && s.LastTurn == "completed"
		})
	}
	interrupt("first prompt", func() {})
	s = r.bridge.AwaitOne("the interrupted session", piSource, 20*time.Second, func(s snapshot) bool {
		return s.Status == "done" && s.PID == pid
	})
	r.checkf(s.LastTurn == "interrupted" && s.Title == "first prompt", "an interrupted first turn is cancelled: %s", s)
	answer("second prompt", "Second answer.")
	interrupt("third prompt", func() { r.bridge.AwaitStatus(piSource, s.ID, "running", 20*time.Second) })
	s = r.bridge.AwaitStatus(piSource, s.ID, "done", 20*time.Second)
	r.checkf(s.LastTurn == "interrupted", "an interrupted turn is cancelled: %s", s)
	answer("fourth prompt", "Fourth answer.")
	h := r.bridge.History(piSource, s.ID)
	evs := r.bridge.Events(piSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "done", "running", "done", "running", "done", "running", "done"}) && turnsStarted(evs) == 4,
		"four prompts, four turns: statuses %v, events %v", h, evs)
}

// Two TUIs in one directory, the second started once the first answered:
// two sessions, each bound to its own process (Pi keeps no journal open:
// the bridge tells them apart by which process started just before each
// session began); quitting one shows it exited and leaves the other as it
// is.
func piTwoSessions(t *testing.T) {
	r := newPiRig(t)
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Text: "Second answer."},
		Step{When: "third prompt", Hold: true})
	// Each is found bound to its own process (answered waits for that).
	a, sa := r.answered("first prompt", "First answer.")
	b, sb := r.answered("second prompt", "Second answer.")
	pb := b.PID()
	r.checkf(sa.ID != sb.ID && sa.Cwd == r.cwd && sb.Cwd == r.cwd && sa.Title == "first prompt" && sb.Title == "second prompt",
		"two sessions: %s %s", sa, sb)
	prompt(b, "third prompt")
	r.model.WaitHolding(60 * time.Second)
	r.bridge.AwaitStatus(piSource, sb.ID, "running", 20*time.Second)
	quit(a, "/quit")
	r.bridge.AwaitStatus(piSource, sa.ID, "exited", 20*time.Second)
	sb, _ = r.bridge.Session(piSource, sb.ID)
	r.checkf(sb.Status == "running" && sb.PID == pb, "the other session is untouched: %s", sb)
}

// /quit shows exited; pi --continue takes the same session up again (never
// removed, no second session) in the new process, and its next turn counts.
func piResume(t *testing.T) {
	r := newPiRig(t)
	r.model.Script(Step{Text: "First answer."}, Step{Text: "Resumed answer."})
	term, s := r.answered("first", "First answer.")
	quit(term, "/quit")
	r.bridge.AwaitStatus(piSource, s.ID, "exited", 20*time.Second)
	term2 := r.tui("--continue")
	pid2 := term2.PID()
	prompt(term2, "second")
	term2.AwaitScreen(60*time.Second, "Resumed answer.")
	r.bridge.Await("the resumed session done in the new process", 20*time.Second, func() bool {
		x, ok := r.bridge.Session(piSource, s.ID)
		s = x
		return ok && x.PID == pid2 && x.Status == "done"
	})
	r.checkf(!r.bridge.Removed(piSource, s.ID) && turnsStarted(r.bridge.Events(piSource, s.ID)) == 2 && s.LastTurn == "completed",
		"resumed: %s removed=%v events %v", s, r.bridge.Removed(piSource, s.ID), r.bridge.Events(piSource, s.ID))
	for _, x := range r.bridge.Sessions(piSource) {
		r.checkf(x.ID == s.ID, "resume makes no second session: %s", x)
	}
	h := r.bridge.History(piSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "done", "exited", "running", "done"}), "statuses %v", h)
}

// kill -9 in the middle of a turn: exited.
func piKill(t *testing.T) {
	r := newPiRig(t)
	r.model.Script(Step{Text: "First answer."}, Step{Hold: true})
	term, s := r.answered("first", "First answer.")
	pid := term.PID()
	prompt(term, "never answered")
	r.model.WaitHolding(60 * time.Second)
	r.bridge.AwaitStatus(piSource, s.ID, "running", 20*time.Second)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s = r.bridge.AwaitStatus(piSource, s.ID, "exited", 10*time.Second)
	r.checkf(s.WaitingFor == "", "exited: %s", s)
}

// After a turn, a shell escape (`!cmd`: Pi runs it with no model call and
// appends a bashExecution message once it is over) and two slash commands
// that call no model (/session shows the session's stats and writes
// nothing; /name writes a session_info entry) open no turn: the session
// stays done, its last turn completed, and /name's title is shown. The
// next prompt is a turn of its own.
func piShellEscape(t *testing.T) {
	r := newPiRig(t)
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Text: "Second answer."})
	term, s := r.answered("first prompt", "First answer.")
	hasLine := func(kind string) bool {
		for _, j := range r.journals() {
			if data, _ := os.ReadFile(j); strings.Contains(string(data), kind) {
				return true
			}
		}
		return false
	}
	prompt(term, "!printf 'shell%sout' -")
	term.AwaitScreen(60*time.Second, "shell-out")
	r.bridge.Await("the shell escape in the journal", 20*time.Second, func() bool { return hasLine(`"role":"bashExecution"`) })
	prompt(term, "/session")
	term.AwaitScreen(20*time.Second, s.ID)
	prompt(term, "/name escaped")
	r.bridge.Await("the session named", 20*time.Second, func() bool {
		s, _ = r.bridge.Session(piSource, s.ID)
		return s.Title == "escaped"
	})
	r.checkf(s.Status == "done" && s.LastTurn == "completed" && turnsStarted(r.bridge.Events(piSource, s.ID)) == 1,
		"after the escape and the slash commands: %s, events %v", s, r.bridge.Events(piSource, s.ID))
	prompt(term, "second prompt")
	term.AwaitScreen(60*time.Second, "Second answer.")
	r.bridge.Await("the second turn done", 20*time.Second, func() bool {
		s, _ = r.bridge.Session(piSource, s.ID)
		return s.Status == "done" && turnsStarted(r.bridge.Events(piSource, s.ID)) == 2
	})
	h := r.bridge.History(piSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "done", "running", "done"}) && s.Title == "escaped",
		"two prompts, two turns, nothing between: statuses %v, %s", h, s)
}

// The bridge restarts while one TUI runs and another, in another
// directory, has quit: the restarted bridge shows the running one with
// the same pid (found again by its cwd and start time), and the other
// ended at once, never alive. (Two sessions in one directory whose
// TUIs were one quit and one running cannot be told apart from /proc
// after a restart: the quit one is then bound to nothing, never to the
// other's process.)
func piRestart(t *testing.T) {
	r := newPiRig(t)
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Text: "Second answer."})
	a, sa := r.answered("first prompt", "First answer.")
	other := filepath.Join(filepath.Dir(r.cwd), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	b := openTerminal(r.t, other, r.env, r.bin)
	b.AwaitScreen(60*time.Second, "mock-model")
	prompt(b, "second prompt")
	b.AwaitScreen(60*time.Second, "Second answer.")
	sb := r.bridge.AwaitOne("the other directory's session", piSource, 20*time.Second, func(s snapshot) bool {
		return s.Status == "done" && s.PID == b.PID() && s.Cwd == other
	})
	quit(b, "/quit")
	r.bridge.AwaitStatus(piSource, sb.ID, "exited", 20*time.Second)

	r.bridge.stop()
	r.bridge = startBridge(t, r.home)
	x := r.bridge.AwaitOne("the running session after the restart", piSource, 20*time.Second, func(s snapshot) bool { return s.ID == sa.ID })
	r.checkf(x.PID == a.PID() && x.Status == "done", "the running TUI's session, same pid %d: %s", a.PID(), x)
	y, ok := r.bridge.Session(piSource, sb.ID)
	r.checkf(ok && y.Status == "exited", "the quit TUI's session ended at once: %s", y)
	r.checkf(!contains(r.bridge.History(piSource, sb.ID), "done"), "the quit TUI's session never showed alive after the restart: %v",
		r.bridge.History(piSource, sb.ID))
}
