package live

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const geminiSource = "gemini"

// geminiRig is one Gemini CLI in a throwaway home (a familyRig) driven in
// tmux.
type geminiRig struct {
	*familyRig
	hooks bool // the bridge's hooks are installed: the CLI gets the bridge's address
}

func newGeminiRig(t *testing.T) *geminiRig {
	t.Helper()
	r := &geminiRig{familyRig: newFamilyRig(t, geminiCLI, geminiAPI{})}
	r.settings(filepath.Join(r.home, ".gemini"), map[string]any{
		"security":               map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
		"folderTrust":            map[string]any{"enabled": false},
		"usageStatisticsEnabled": false,
		"privacy":                map[string]any{"usageStatisticsEnabled": false},
		"general":                map[string]any{"disableAutoUpdate": true},
		"disableAutoUpdate":      true,
	})
	return r
}

// geminiEnv is what the CLI needs to talk to the scripted model.
func (r *geminiRig) geminiEnv() []string {
	env := []string{"GEMINI_API_KEY=dummy", "GOOGLE_GEMINI_BASE_URL=" + r.model.URL, "SHELL=/bin/bash", "LANG=C.UTF-8"}
	if r.hooks {
		env = append(env, "AGENTBRIDGE_ADDR="+strings.TrimPrefix(r.bridge.base, "http://"), "AGENTBRIDGE_TOKEN="+r.bridge.token)
	}
	return env
}

// installHooks runs `agentbridge hooks install --harness gemini-cli` for
// the rig's home, as a user would.
func (r *geminiRig) installHooks() {
	r.t.Helper()
	cmd := exec.Command(agentbridgeBin(r.t), "hooks", "install", "--harness", "gemini-cli")
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + r.home,
		"XDG_CONFIG_HOME=" + filepath.Join(r.home, ".config"), "XDG_STATE_HOME=" + filepath.Join(r.home, ".local", "state")}
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("agentbridge hooks install: %v\n%s", err, out)
	}
	r.hooks = true
}

// tui starts the interactive CLI in tmux (default approval mode: shell
// commands ask) and waits for its input box.
func (r *geminiRig) tui(args ...string) *terminal {
	r.t.Helper()
	term := openTerminal(r.t, r.cwd, append(append([]string{}, r.env...), r.geminiEnv()...), append([]string{r.bin}, args...)...)
	term.AwaitScreen(60*time.Second, "Type your message")
	return term
}

// descends reports whether process pid is ancestor or runs below it.
func descends(pid, ancestor int) bool {
	for n := 0; pid > 1 && n < 64; n++ {
		if pid == ancestor {
			return true
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 {
			return false
		}
		f := strings.Fields(st[i+1:])
		if len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return false
}

// session waits for the one session bound to a process the terminal
// runs: Gemini CLI starts itself again as a child of the pane's process
// (with more memory), and that child, which writes the chat, is the one
// bound — never the wrapper waiting for it.
func (r *geminiRig) session(term *terminal) snapshot {
	r.t.Helper()
	pane := term.PID()
	s := r.bridge.AwaitOne("the gemini session of the terminal", geminiSource, 60*time.Second, func(s snapshot) bool {
		return s.PID != 0 && s.Status != "exited" && descends(s.PID, pane)
	})
	r.checkf(s.PID != pane, "bound to the wrapper %d, not its child: %s", pane, s)
	return s
}

// geminiPrompt types a prompt and submits it. Gemini CLI takes quick
// input as a paste, and an Enter that arrives with it (or while the CLI
// still starts) stays in the input box: press it again until the box is
// empty or something replaced it.
func geminiPrompt(term *terminal, text string) {
	term.t.Helper()
	box := "\n > " + text
	// Keys typed while the CLI still loads (a resumed chat) can be lost:
	// type again until the input box shows the text.
	for i := 0; ; i++ {
		term.Type(text)
		if _, ok := term.waitScreen(5*time.Second, func(s string) bool { return strings.Contains(s, box) }); ok {
			break
		}
		if i == 3 {
			term.t.Fatalf("the input box never showed %q:\n%s", text, term.Screen())
		}
		term.Keys("C-u")
	}
	for i := 0; ; i++ {
		time.Sleep(300 * time.Millisecond)
		term.Keys("Enter")
		if _, ok := term.waitScreen(3*time.Second, func(s string) bool { return !strings.Contains(s, box) }); ok {
			return
		}
		if i == 5 {
			term.t.Fatalf("the prompt stays in the input box:\n%s", term.Screen())
		}
	}
}

// geminiQuit ends the TUI with /quit (an Enter may first only pick the
// command from the completion menu) and waits for its process to be gone.
func geminiQuit(term *terminal) {
	term.t.Helper()
	pid := term.PID()
	geminiPrompt(term, "/quit")
	term.awaitExit(pid)
}

// checkf fails the test with the rig's chats and model log.
func (r *geminiRig) checkf(ok bool, format string, args ...any) {
	r.t.Helper()
	if !ok {
		r.t.Fatalf(format+"\nchats:\n%s\nmodel requests:\n%s", append(args, r.describeChats(), r.model.Log())...)
	}
}

// describeChats condenses the chats to one line per record.
func (r *geminiRig) describeChats() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(r.home, ".gemini", "tmp", "*", "chats", "*.jsonl"))
	more, _ := filepath.Glob(filepath.Join(r.home, ".gemini", "tmp", "*", "chats", "*", "*.jsonl"))
	for _, f := range append(files, more...) {
		data, _ := os.ReadFile(f)
		b.WriteString("chat " + filepath.Base(f) + ":\n")
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			b.WriteString("  " + bounded(line, 200) + "\n")
		}
	}
	return b.String()
}

func TestGeminiCLITUI(t *testing.T) {
	enabled(t)
	col := geminiCLI.Label()
	scenario(t, col, "prompt answered", geminiPrompted)
	scenario(t, col, "prompt answered (headless)", geminiHeadless)
	scenario(t, col, "approval: approve", func(t *testing.T) { geminiApproval(t, true) })
	scenario(t, col, "approval: deny", func(t *testing.T) { geminiApproval(t, false) })
	scenario(t, col, "interrupt before output", geminiInterrupt)
	scenario(t, col, "subagent", geminiSubagent)
	scenario(t, col, "two sessions, one cwd", geminiTwoSessions)
	scenario(t, col, "quit, resume", geminiResume)
	scenario(t, col, "kill -9", geminiKill)
	scenario(t, col, "bridge restart", geminiRestart)
}

// A fresh TUI is an idle session bound to its process; a prompt is one
// turn, running then done, with its title, model and cwd; a terminal finds
// its session by the pid of the process it runs.
func geminiPrompted(t *testing.T) {
	r := newGeminiRig(t)
	r.model.Script(Step{Text: "Hello from the live model."})
	term := r.tui()
	s := r.session(term)
	r.checkf(s.Status == "idle" && s.Cwd == r.cwd, "a fresh TUI: %s", s)
	geminiPrompt(term, "say hello")
	term.AwaitScreen(60*time.Second, "Hello from the live model.")
	s = r.bridge.AwaitStatus(geminiSource, s.ID, "done", 20*time.Second)
	r.checkf(s.LastTurn == "completed" && s.Title == "say hello" && strings.Contains(s.Model, "gemini"), "done turn: %s", s)
	h := r.bridge.History(geminiSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "done"}) && turnsStarted(r.bridge.Events(geminiSource, s.ID)) == 1, "statuses %v", h)
	ids := r.bridge.SessionsOf(geminiSource, "ancestorPid="+strconv.Itoa(term.PID()))
	r.checkf(equal(ids, []string{s.ID}), "ancestorPid=%d lists %v", term.PID(), ids)
}

// gemini -p: the session runs and ends; once its process is gone it is
// exited (its process was found) or done.
func geminiHeadless(t *testing.T) {
	r := newGeminiRig(t)
	r.model.Script(Step{Text: "Live answer."})
	out := r.headless(r.geminiEnv(), "-p", "answer live")
	r.checkf(strings.Contains(out, "Live answer."), "the CLI printed %q", out)
	s := r.bridge.AwaitOne("the answered session", geminiSource, 20*time.Second, func(s snapshot) bool {
		return (s.Status == "done" || s.Status == "exited") && s.LastTurn == "completed"
	})
	h := r.bridge.History(geminiSource, s.ID)
	r.checkf(strings.Contains(strings.Join(h, " "), "running") && s.Cwd == r.cwd && strings.Contains(s.Model, "gemini"), "%s, statuses %v", s, h)
}

// A shell command the model runs asks first (the default approval mode).
// Gemini CLI writes nothing of it to the chat before it is answered (a
// reply with no text, the tool call only once it is over), so the
// waiting state and its reason come from the bridge's hooks, installed
// with `agentbridge hooks install`: waiting names the command, then
// running, then done; approved, the command ran; denied, it did not and
// the turn is cancelled.
func geminiApproval(t *testing.T, approve bool) {
	r := newGeminiRig(t)
	r.installHooks()
	marker := filepath.Join(r.cwd, "marker")
	r.model.Script(
		Step{Tool: &ToolCall{Name: "run_shell_command", Input: map[string]any{"command": "touch " + marker, "description": "Create the marker file"}}},
		Step{When: "functionResponse", Text: "Finished with the file."},
	)
	term := r.tui()
	s := r.session(term)
	geminiPrompt(term, "make the marker")
	term.AwaitScreen(60*time.Second, "Allow execution of")
	s = r.bridge.AwaitStatus(geminiSource, s.ID, "waiting", 20*time.Second)
	r.checkf(strings.Contains(s.WaitingFor, "touch") && strings.Contains(s.WaitingFor, "marker") && !strings.Contains(s.WaitingFor, r.cwd),
		"waitingFor names the command, paths shortened: %q", s.WaitingFor)
	key := "Escape"
	if approve {
		key = "1"
	}
	for i := 0; ; i++ {
		term.Keys(key)
		if _, gone := term.waitScreen(3*time.Second, func(x string) bool { return !strings.Contains(x, "Allow execution of") }); gone {
			break
		}
		if i == 3 {
			term.AwaitNoScreen(time.Second, "Allow execution of")
		}
	}
	s = r.bridge.AwaitStatus(geminiSource, s.ID, "done", 30*time.Second)
	_, err := os.Stat(marker)
	if approve {
		term.AwaitScreen(60*time.Second, "Finished with the file.")
		r.checkf(err == nil && s.LastTurn == "completed", "approved: marker %v, %s", err, s)
	} else {
		term.AwaitScreen(30*time.Second, "Request cancelled.")
		r.checkf(os.IsNotExist(err) && s.LastTurn == "interrupted", "denied: marker %v, %s", err, s)
	}
	r.checkf(s.WaitingFor == "", "no waitingFor once done: %s", s)
	h := r.bridge.History(geminiSource, s.ID)
	// Denied, the tool never runs: the wait ends with the turn.
	r.checkf(equal(h, []string{"idle", "running", "waiting", "running", "done"}) || (!approve && equal(h, []string{"idle", "running", "waiting", "done"})),
		"statuses %v", h)
	var tool string
	for _, e := range r.bridge.Events(geminiSource, s.ID) {
		if e.Kind == "tool.started" {
			tool = e.Name
		}
	}
	r.checkf(tool == "Shell", "the tool call, from the chat: %q", tool)
}

// Escape while the model holds its reply: the turn ends cancelled; the
// next prompt is a turn of its own.
func geminiInterrupt(t *testing.T) {
	r := newGeminiRig(t)
	r.model.Script(Step{Hold: true}, Step{Text: "Second answer."})
	term := r.tui()
	s := r.session(term)
	geminiPrompt(term, "wait for it")
	r.model.WaitHolding(60 * time.Second)
	r.bridge.AwaitStatus(geminiSource, s.ID, "running", 20*time.Second)
	term.Keys("Escape")
	r.model.AwaitDropped()
	s = r.bridge.AwaitStatus(geminiSource, s.ID, "done", 20*time.Second)
	r.checkf(s.LastTurn == "interrupted", "an interrupted turn is cancelled: %s", s)
	term.Keys("C-u")
	s = r.bridge.againCompletes(term, geminiPrompt, geminiSource, s.ID)
	h := r.bridge.History(geminiSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "done", "running", "done"}), "statuses %v", h)
}

// invoke_agent runs the generalist subagent in the same process, against
// the same model, with a chat of its own under the parent's: the parent
// lists it running, then completed, and it is never a session.
func geminiSubagent(t *testing.T) {
	r := newGeminiRig(t)
	r.model.Script(
		Step{Tool: &ToolCall{Name: "invoke_agent", Input: map[string]any{"agent_name": "generalist", "prompt": "SUBTASK: count the files"}}},
		Step{When: "SUBTASK: count the files", Delay: 2 * time.Second, Tool: &ToolCall{Name: "complete_task", Input: map[string]any{"result": map[string]any{"response": "There are no files."}}}},
		Step{When: "functionResponse", Text: "The agent found no files."},
	)
	term := r.tui()
	s := r.session(term)
	geminiPrompt(term, "delegate the count")
	r.bridge.Await("a running subagent", 60*time.Second, func() bool {
		s, _ = r.bridge.Session(geminiSource, s.ID)
		return len(s.Subagents) == 1 && s.Subagents[0].Status == "running"
	})
	term.AwaitScreen(60*time.Second, "The agent found no files.")
	r.bridge.Await("the subagent completed and the parent done", 30*time.Second, func() bool {
		s, _ = r.bridge.Session(geminiSource, s.ID)
		return len(s.Subagents) == 1 && s.Subagents[0].Status == "completed" && s.Status == "done"
	})
	r.checkf(s.LastTurn == "completed", "parent: %s", s)
	for _, x := range r.bridge.Sessions(geminiSource) {
		r.checkf(x.ID == s.ID, "a subagent is never a session of its own: %s", x)
	}
}

// Two TUIs in one directory are two sessions, each bound to its own
// process; quitting one leaves the other as it is. The second TUI's
// start-up cleanup deletes the first one's chat (it holds no conversation
// yet) and the first TUI writes it again, without its metadata, at its
// next prompt: the session leaves and comes back, the same one.
func geminiTwoSessions(t *testing.T) {
	r := newGeminiRig(t)
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Hold: true})
	a := r.tui()
	sa := r.session(a)
	b := r.tui()
	sb := r.session(b)
	r.checkf(sa.ID != sb.ID, "two sessions: %s %s", sa, sb)
	geminiPrompt(a, "first prompt")
	a.AwaitScreen(60*time.Second, "First answer.")
	r.bridge.Await("the first session done, bound to its process", 20*time.Second, func() bool {
		x, ok := r.bridge.Session(geminiSource, sa.ID)
		return ok && x.Status == "done" && x.PID != a.PID() && descends(x.PID, a.PID())
	})
	geminiPrompt(b, "second prompt")
	r.model.WaitHolding(60 * time.Second)
	sa = r.bridge.AwaitStatus(geminiSource, sa.ID, "done", 20*time.Second)
	sb = r.bridge.AwaitStatus(geminiSource, sb.ID, "running", 20*time.Second)
	r.checkf(sa.Cwd == r.cwd && sb.Cwd == r.cwd, "both in the project: %s %s", sa, sb)
	geminiQuit(a)
	r.bridge.AwaitStatus(geminiSource, sa.ID, "exited", 20*time.Second)
	sb, _ = r.bridge.Session(geminiSource, sb.ID)
	r.checkf(sb.Status == "running", "the other session is untouched: %s", sb)
}

// /quit keeps a chat with a conversation: the session is exited; `gemini
// --resume latest` takes the same session up in a new process, and its
// next turn is counted on it.
func geminiResume(t *testing.T) {
	r := newGeminiRig(t)
	r.model.Script(Step{Text: "First answer."}, Step{Text: "Resumed answer."})
	term := r.tui()
	s := r.session(term)
	geminiPrompt(term, "first")
	term.AwaitScreen(60*time.Second, "First answer.")
	r.bridge.AwaitStatus(geminiSource, s.ID, "done", 20*time.Second)
	geminiQuit(term)
	r.bridge.AwaitStatus(geminiSource, s.ID, "exited", 20*time.Second)
	term2 := r.tui("--resume", "latest")
	r.bridge.Await("the resumed session with the new process", 60*time.Second, func() bool {
		x, ok := r.bridge.Session(geminiSource, s.ID)
		return ok && x.Status != "exited" && descends(x.PID, term2.PID()) && x.PID != term2.PID()
	})
	geminiPrompt(term2, "second")
	term2.AwaitScreen(60*time.Second, "Resumed answer.")
	r.bridge.Await("the resumed turn to complete", 20*time.Second, func() bool {
		s, _ = r.bridge.Session(geminiSource, s.ID)
		return s.Status == "done" && s.LastTurn == "completed" && turnsStarted(r.bridge.Events(geminiSource, s.ID)) == 2
	})
	r.checkf(!r.bridge.Removed(geminiSource, s.ID), "resumed: %s removed", s)
	for _, x := range r.bridge.Sessions(geminiSource) {
		r.checkf(x.ID == s.ID, "resume makes no second session: %s", x)
	}
}

// kill -9 of the CLI in the middle of a turn: exited, seen through the
// process the bridge bound (nothing is written to the chat).
func geminiKill(t *testing.T) {
	r := newGeminiRig(t)
	r.model.Script(Step{Hold: true})
	term := r.tui()
	s := r.session(term)
	pid := s.PID
	geminiPrompt(term, "never answered")
	r.model.WaitHolding(60 * time.Second)
	r.bridge.AwaitStatus(geminiSource, s.ID, "running", 20*time.Second)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s = r.bridge.AwaitStatus(geminiSource, s.ID, "exited", 10*time.Second)
	r.checkf(s.WaitingFor == "", "exited: %s", s)
}

// The bridge restarts while one TUI runs and another, in another
// project, has quit (its chat kept: it holds a conversation): the
// restarted bridge shows the running one bound to the same process, and
// the other ended at once, never alive.
func geminiRestart(t *testing.T) {
	r := newGeminiRig(t)
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Text: "Second answer."})
	a := r.tui()
	sa := r.session(a)
	geminiPrompt(a, "first prompt")
	a.AwaitScreen(60*time.Second, "First answer.")
	sa = r.bridge.AwaitStatus(geminiSource, sa.ID, "done", 20*time.Second)
	other := filepath.Join(filepath.Dir(r.cwd), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	b := openTerminal(r.t, other, append(append([]string{}, r.env...), r.geminiEnv()...), r.bin)
	b.AwaitScreen(60*time.Second, "Type your message")
	sb := r.session(b)
	geminiPrompt(b, "second prompt")
	b.AwaitScreen(60*time.Second, "Second answer.")
	r.bridge.AwaitStatus(geminiSource, sb.ID, "done", 20*time.Second)
	geminiQuit(b)
	r.bridge.AwaitStatus(geminiSource, sb.ID, "exited", 20*time.Second)

	r.bridge.stop()
	r.bridge = startBridge(t, r.home)
	x := r.bridge.AwaitOne("the running session after the restart", geminiSource, 20*time.Second, func(s snapshot) bool { return s.ID == sa.ID })
	r.checkf(x.PID == sa.PID && descends(x.PID, a.PID()) && x.Status == "done", "the running TUI's session, same pid %d: %s", sa.PID, x)
	y, ok := r.bridge.Session(geminiSource, sb.ID)
	r.checkf(ok && y.Status == "exited", "the quit TUI's session ended at once: %s", y)
	r.checkf(!contains(r.bridge.History(geminiSource, sb.ID), "done"), "the quit TUI's session never showed alive after the restart: %v",
		r.bridge.History(geminiSource, sb.ID))
}
