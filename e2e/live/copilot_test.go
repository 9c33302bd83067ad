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

// GitHub Copilot CLI runs offline with its own model provider ("BYOK"):
// COPILOT_PROVIDER_BASE_URL points it at an OpenAI Chat Completions server
// (ours, on loopback), COPILOT_OFFLINE=true keeps it from GitHub's servers
// (no login, no token exchange, no telemetry, no update check). The npm
// package's `copilot` is a node loader that runs the native binary of
// @github/copilot-linux-x64 as its child; that child is the agent (it
// makes the session's inuse.<pid>.lock).
var copilotCLI = agentCLI{Agent: "copilot-cli", Pkg: "@github/copilot", Version: "1.0.102", Bin: "copilot"}

const copilotSource = "copilot"

// copilotRig is one private Copilot CLI (a familyRig: a throwaway home, a
// project dir, the scripted Chat Completions server and a bridge watching
// the home), its folder trusted and its model provider ours.
type copilotRig struct{ *familyRig }

func newCopilotRig(t *testing.T) *copilotRig {
	t.Helper()
	enabled(t)
	r := &copilotRig{newFamilyRig(t, copilotCLI, chatAPI{})}
	// The folder-trust dialog a first start shows, answered "remember".
	b, _ := json.Marshal(map[string]any{"trustedFolders": []string{r.cwd}, "appTipShown": true})
	if err := os.MkdirAll(filepath.Join(r.home, ".copilot"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.home, ".copilot", "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	r.env = append(r.env,
		"LANG=C.UTF-8",
		"SHELL=/bin/bash",
		"COPILOT_OFFLINE=true",
		"COPILOT_AUTO_UPDATE=false",
		"COPILOT_PROVIDER_BASE_URL="+r.model.URL+"/v1",
		"COPILOT_PROVIDER_API_KEY=dummy",
		"COPILOT_MODEL=mock-model",
		"COPILOT_PROVIDER_MAX_PROMPT_TOKENS=128000",
		"COPILOT_PROVIDER_MAX_OUTPUT_TOKENS=8192",
		// The native binary unpacks its JavaScript (about 230 MB) on first
		// start: once into the suite's cache, not into every home.
		"COPILOT_PKG_CACHE_HOME="+filepath.Join(cacheDir(), "copilot-pkg"),
	)
	return r
}

// tui starts the interactive CLI in tmux and waits for its input box.
func (r *copilotRig) tui(args ...string) *terminal {
	r.t.Helper()
	// The agent is the loader's child and outlives it by a moment when
	// the terminal closes (it writes its shutdown): wait for it too, so
	// that nothing writes into the test's directories after the test.
	// (Registered first, this runs after the terminal's own cleanup.)
	agent := 0
	r.t.Cleanup(func() {
		if agent > 0 {
			awaitGone(agent, 15*time.Second)
		}
	})
	term := openTerminal(r.t, r.cwd, r.env, append([]string{r.bin}, args...)...)
	agent = r.agentPID(term)
	term.AwaitScreen(90*time.Second, "? help")
	return term
}

// started starts the TUI and submits its first prompt; it returns the
// terminal and the agent's pid.
func (r *copilotRig) started(text string) (*terminal, int) {
	r.t.Helper()
	term := r.tui()
	pid := r.agentPID(term)
	prompt(term, text)
	return term, pid
}

// agentPID is the pid of the agent process in the terminal: the loader's
// child (the native binary).
func (r *copilotRig) agentPID(term *terminal) int {
	r.t.Helper()
	pane := term.PID()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pane) + "/task/" + strconv.Itoa(pane) + "/children")
		if f := strings.Fields(string(b)); len(f) > 0 {
			pid, _ := strconv.Atoi(f[0])
			return pid
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the copilot loader (pid %d) has no child", pane)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// session waits for the one session whose process is pid.
func (r *copilotRig) session(timeout time.Duration, pid int) snapshot {
	r.t.Helper()
	return r.bridge.AwaitOne("the copilot session of pid "+strconv.Itoa(pid), copilotSource, timeout,
		func(s snapshot) bool { return s.PID == pid })
}

// journals lists the session journals written under session-state/.
func (r *copilotRig) journals() map[string]string {
	out := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(r.home, ".copilot", "session-state", "*", "events.jsonl"))
	for _, f := range files {
		out[filepath.Base(filepath.Dir(f))] = f
	}
	return out
}

// checkf fails the test with the record types of the rig's journals and
// the model log.
func (r *copilotRig) checkf(ok bool, format string, args ...any) {
	r.t.Helper()
	if !ok {
		r.t.Fatalf(format+"\n%s\nmodel requests:\n%s", append(args, r.describeJournals(), r.model.Log())...)
	}
}

// describeJournals condenses each journal to its record types, for
// failure messages.
func (r *copilotRig) describeJournals() string {
	var b strings.Builder
	for id, p := range r.journals() {
		data, _ := os.ReadFile(p)
		b.WriteString("journal " + id + ":")
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var rec struct {
				Type string `json:"type"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil {
				rec.Type = "(not JSON)"
			}
			b.WriteString(" " + rec.Type)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestCopilotCLI(t *testing.T) {
	enabled(t)
	c := copilotCLI.Label()
	scenario(t, c, "prompt answered", copilotPrompt)
	scenario(t, c, "prompt answered (headless)", copilotHeadless)
	scenario(t, c, "approval: approve", func(t *testing.T) { copilotApproval(t, true) })
	scenario(t, c, "approval: deny", func(t *testing.T) { copilotApproval(t, false) })
	scenario(t, c, "interrupt before output", copilotInterrupt)
	scenario(t, c, "subagent", copilotSubagent)
	scenario(t, c, "two sessions, one cwd", copilotTwoSessions)
	scenario(t, c, "quit, resume", copilotResume)
	scenario(t, c, "kill -9", copilotKill)
}

// One prompt, one turn: running then done, completed, with the agent's
// pid, cwd and model; a terminal finds it by its shell's pid.
func copilotPrompt(t *testing.T) {
	r := newCopilotRig(t)
	r.model.Script(Step{Text: "Hello from the live model."})
	term, pid := r.started("say hello")
	term.AwaitScreen(60*time.Second, "Hello from the live model.")
	s := r.session(30*time.Second, pid)
	s = r.bridge.AwaitStatus(copilotSource, s.ID, "done", 20*time.Second)
	r.checkf(s.LastTurn == "completed" && s.Cwd == r.cwd && s.Model == "mock-model" && s.Title != "", "done turn: %s", s)
	h := r.bridge.History(copilotSource, s.ID)
	evs := r.bridge.Events(copilotSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "done"}) && turnsStarted(evs) == 1,
		"one prompt, one turn: statuses %v, events %v", h, evs)
	ids := r.bridge.SessionsOf(copilotSource, "ancestorPid="+strconv.Itoa(term.PID()))
	r.checkf(equal(ids, []string{s.ID}), "ancestorPid=%d lists %v", term.PID(), ids)
}

// copilot -p: the session runs, completes, and exits (session.shutdown).
func copilotHeadless(t *testing.T) {
	r := newCopilotRig(t)
	r.model.Script(Step{Text: "Headless answer."})
	out := r.headless(nil, "-p", "answer headless")
	r.checkf(strings.Contains(out, "Headless answer."), "copilot -p printed %q", out)
	s := r.bridge.AwaitOne("the headless session", copilotSource, 20*time.Second, func(s snapshot) bool { return s.Status == "exited" })
	evs := r.bridge.Events(copilotSource, s.ID)
	r.checkf(turnsStarted(evs) == 1 && s.LastTurn == "completed", "headless: %s %v", s, evs)
}

// A shell command needs approval: the bridge shows waiting, naming the
// command (paths shortened); approving runs it, denying does not, and the
// turn ends either way.
func copilotApproval(t *testing.T, approve bool) {
	r := newCopilotRig(t)
	marker := filepath.Join(r.cwd, "marker")
	answer := "Finished with the file."
	if !approve {
		answer = "Leaving the file alone."
	}
	r.model.Script(
		Step{Text: "I will create the file.", Tool: &ToolCall{Name: "bash", Input: map[string]any{
			"command": "touch " + marker, "description": "Create the marker file"}}},
		Step{When: `"role":"tool"`, Text: answer},
	)
	term, pid := r.started("make the marker")
	term.AwaitScreen(60*time.Second, "Do you want to run this command?")
	s := r.session(30*time.Second, pid)
	s = r.bridge.AwaitStatus(copilotSource, s.ID, "waiting", 20*time.Second)
	r.checkf(strings.Contains(s.WaitingFor, "touch") && strings.Contains(s.WaitingFor, "marker") && !strings.Contains(s.WaitingFor, r.cwd),
		"waitingFor names the command, paths shortened: %q", s.WaitingFor)
	// Approve: Enter on the first choice, "Yes". Deny: "3", "No, and tell
	// Copilot what to do differently", turns into a text box; the answer
	// goes to the model as the tool's result. (Escape would stop the
	// whole turn instead: that is the interrupt.)
	const dialog = "Do you want to run this command?"
	if approve {
		pressUntil(term, "Enter", func(x string) bool { return !strings.Contains(x, dialog) })
	} else {
		pressUntil(term, "Down", func(x string) bool { return strings.Contains(x, "❯ 3.") })
		term.Type("leave it")
		pressUntil(term, "Enter", func(x string) bool { return !strings.Contains(x, dialog) })
	}
	s = r.bridge.AwaitStatus(copilotSource, s.ID, "done", 30*time.Second)
	_, err := os.Stat(marker)
	term.AwaitScreen(60*time.Second, answer)
	r.checkf(approve == (err == nil) && s.LastTurn == "completed", "approve=%v: marker %v, %s", approve, err, s)
	r.checkf(s.WaitingFor == "", "no waitingFor once done: %s", s)
	h := r.bridge.History(copilotSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "waiting", "running", "done"}) || equal(h, []string{"idle", "running", "waiting", "done"}),
		"statuses %v", h)
}

// Escape twice before the model sent anything withdraws the prompt: the
// turn is cancelled, the prompt goes back into the input box, and
// Copilot rewinds the journal to before it. The bridge never reports the
// turn completed; it shows it cancelled (the abort was read before the
// rewind) or gone (the rewind came first), keeping the process; the next
// prompt is a turn of its own.
func copilotInterrupt(t *testing.T) {
	r := newCopilotRig(t)
	r.model.Script(Step{Hold: true}, Step{Text: "Second answer."})
	term, pid := r.started("wait for it")
	r.model.WaitHolding(60 * time.Second)
	s := r.session(30*time.Second, pid)
	s = r.bridge.AwaitStatus(copilotSource, s.ID, "running", 20*time.Second)
	// One Escape arms ("esc again to edit prompt"), a second one within a
	// moment withdraws the prompt.
	pressUntil(term, "Escape", func(x string) bool { return strings.Contains(x, "again to") })
	term.Keys("Escape")
	r.model.AwaitDropped()
	r.bridge.Await("the withdrawn turn to be over", 20*time.Second, func() bool {
		s, _ = r.bridge.Session(copilotSource, s.ID)
		return s.Status == "done" && s.LastTurn == "interrupted" || s.Status == "idle" && s.LastTurn == ""
	})
	r.checkf(s.PID == pid, "the session keeps its process: %s", s)
	for _, e := range r.bridge.Events(copilotSource, s.ID) {
		r.checkf(e.Kind != "agent.done" || e.Outcome == "cancelled", "the withdrawn turn ended %q", e.Outcome)
	}
	term.Keys("C-u")
	s = r.bridge.againCompletes(term, prompt, copilotSource, s.ID)
	r.checkf(s.PID == pid, "the session keeps its process: %s", s)
}

// A subagent (the task tool, sync): the parent lists it running, then
// completed, and the turn ends once the parent has answered.
func copilotSubagent(t *testing.T) {
	r := newCopilotRig(t)
	r.model.Script(
		Step{Text: "Delegating.", Tool: &ToolCall{Name: "task", Input: map[string]any{
			"name": "counter", "description": "Count the files", "prompt": "SUBTASK: count the files",
			"agent_type": "explore", "mode": "sync"}}},
		Step{When: "SUBTASK: count the files", Text: "There are no files.", Delay: 2 * time.Second},
		Step{When: `"role":"tool"`, Text: "The agent found no files."},
	)
	term, pid := r.started("delegate the count")
	s := r.session(60*time.Second, pid)
	r.bridge.Await("a running subagent", 60*time.Second, func() bool {
		s, _ = r.bridge.Session(copilotSource, s.ID)
		return len(s.Subagents) == 1 && s.Subagents[0].Status == "running"
	})
	r.checkf(s.Subagents[0].Title == "Count the files" && s.Subagents[0].Type == "explore" && s.Status == "running", "subagent: %s", s)
	term.AwaitScreen(60*time.Second, "The agent found no files.")
	r.bridge.Await("the subagent completed and the parent done", 30*time.Second, func() bool {
		s, _ = r.bridge.Session(copilotSource, s.ID)
		return len(s.Subagents) == 1 && s.Subagents[0].Status == "completed" && s.Status == "done"
	})
	r.checkf(s.LastTurn == "completed" && turnsStarted(r.bridge.Events(copilotSource, s.ID)) == 1, "one turn: %s", s)
	for _, x := range r.bridge.Sessions(copilotSource) {
		r.checkf(x.ID == s.ID, "a subagent is never a session of its own: %s", x)
	}
}

// Two TUIs in one directory are two sessions, each with its own pid;
// quitting one leaves the other as it was.
func copilotTwoSessions(t *testing.T) {
	r := newCopilotRig(t)
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Hold: true})
	a, b := r.tui(), r.tui()
	pa, pb := r.agentPID(a), r.agentPID(b)
	prompt(a, "first prompt")
	a.AwaitScreen(60*time.Second, "First answer.")
	prompt(b, "second prompt")
	r.model.WaitHolding(60 * time.Second)
	sa, sb := r.session(30*time.Second, pa), r.session(30*time.Second, pb)
	r.checkf(sa.ID != sb.ID, "two sessions: %s %s", sa, sb)
	sa = r.bridge.AwaitStatus(copilotSource, sa.ID, "done", 20*time.Second)
	sb = r.bridge.AwaitStatus(copilotSource, sb.ID, "running", 20*time.Second)
	r.checkf(sa.Cwd == r.cwd && sb.Cwd == r.cwd, "both in the project: %s %s", sa, sb)
	quit(a, "/exit")
	r.bridge.AwaitStatus(copilotSource, sa.ID, "exited", 20*time.Second)
	sb, _ = r.bridge.Session(copilotSource, sb.ID)
	r.checkf(sb.Status == "running" && sb.PID == pb, "the other session is untouched: %s", sb)
}

// /exit shows exited; `copilot --resume=<id>` brings the same session
// back (never removed) with the new pid, and its next turn is counted.
func copilotResume(t *testing.T) {
	r := newCopilotRig(t)
	r.model.Script(Step{Text: "First answer."}, Step{Text: "Resumed answer."})
	term, pid := r.started("first")
	term.AwaitScreen(60*time.Second, "First answer.")
	s := r.session(30*time.Second, pid)
	r.bridge.AwaitStatus(copilotSource, s.ID, "done", 20*time.Second)
	quit(term, "/exit")
	r.bridge.AwaitStatus(copilotSource, s.ID, "exited", 20*time.Second)
	// Copilot 1.0.102 writes nothing for a resumed session (no record, no
	// lock file) before its first prompt: the session shows its new
	// process from then on.
	term2 := r.tui("--resume=" + s.ID)
	pid2 := r.agentPID(term2)
	prompt(term2, "second")
	term2.AwaitScreen(60*time.Second, "Resumed answer.")
	r.bridge.Await("the resumed session with the new pid, its second turn done", 30*time.Second, func() bool {
		s, _ = r.bridge.Session(copilotSource, s.ID)
		return s.PID == pid2 && s.Status == "done" && turnsStarted(r.bridge.Events(copilotSource, s.ID)) == 2
	})
	r.checkf(!r.bridge.Removed(copilotSource, s.ID) && s.LastTurn == "completed",
		"resumed: %s removed=%v events %v", s, r.bridge.Removed(copilotSource, s.ID), r.bridge.Events(copilotSource, s.ID))
	for _, x := range r.bridge.Sessions(copilotSource) {
		r.checkf(x.ID == s.ID, "resume makes no second session: %s", x)
	}
}

// kill -9 of the agent in the middle of a turn: exited (its pidfd), with
// no session.shutdown written.
func copilotKill(t *testing.T) {
	r := newCopilotRig(t)
	r.model.Script(Step{Hold: true})
	_, pid := r.started("never answered")
	r.model.WaitHolding(60 * time.Second)
	s := r.session(30*time.Second, pid)
	r.bridge.AwaitStatus(copilotSource, s.ID, "running", 20*time.Second)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s = r.bridge.AwaitStatus(copilotSource, s.ID, "exited", 10*time.Second)
	r.checkf(s.WaitingFor == "", "exited: %s", s)
	data, _ := os.ReadFile(r.journals()[s.ID])
	r.checkf(!strings.Contains(string(data), `"session.shutdown"`), "a killed CLI writes no shutdown")
}

// pressUntil presses key until the screen satisfies done: a key pressed
// while a dialog is still drawing can be lost, and the dialog reads keys
// only while it is up, so pressing again is safe.
func pressUntil(term *terminal, key string, done func(string) bool) {
	term.t.Helper()
	for i := 0; ; i++ {
		term.Keys(key)
		s, ok := term.waitScreen(3*time.Second, done)
		if ok {
			return
		}
		if i == 3 {
			term.t.Fatalf("pressing %s did not take; the terminal shows:\n%s", key, s)
		}
	}
}
