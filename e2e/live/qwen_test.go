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

	"github.com/agentbridge/agentbridge/proc"
)

const qwenSource = "qwen"

// qwenRig is Qwen Code's TUI in tmux: a familyRig (a private home, the
// scripted Chat Completions server, a bridge) with the settings a first
// start would ask for.
type qwenRig struct {
	*familyRig
}

func newQwenRig(t *testing.T) *qwenRig {
	t.Helper()
	r := &qwenRig{newFamilyRig(t, qwenCLI, chatAPI{})}
	r.settings(filepath.Join(r.home, ".qwen"), map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}, "folderTrust": map[string]any{"enabled": false}},
		// Else a memory subagent makes model requests of its own.
		"memory": map[string]any{"enableManagedAutoMemory": false},
		// Ask before running tools (the default is a model-based mode).
		"tools":   map[string]any{"approvalMode": "default"},
		"privacy": map[string]any{"usageStatisticsEnabled": false},
	})
	return r
}

// tui starts the interactive CLI in tmux and waits for its input box.
func (r *qwenRig) tui(args ...string) *terminal {
	r.t.Helper()
	return r.tuiIn(r.cwd, args...)
}

// tuiIn is tui in directory cwd.
func (r *qwenRig) tuiIn(cwd string, args ...string) *terminal {
	r.t.Helper()
	env := append(append([]string{}, r.env...), "LANG=C.UTF-8", "SHELL=/bin/bash",
		"OPENAI_BASE_URL="+r.model.URL+"/v1", "OPENAI_API_KEY=dummy", "OPENAI_MODEL=mock-model")
	term := openTerminal(r.t, cwd, env, append([]string{r.bin}, args...)...)
	term.AwaitScreen(90*time.Second, "Type your message")
	return term
}

// session waits for the one qwen session bound to the TUI started as pid
// (the pane's process), and returns it. Qwen writes its chat from the
// first prompt on: a TUI with no prompt yet has no session. Its process
// relaunches itself as a child (Node with a larger heap): the session's
// pid is that child's, which <id>.runtime.json names.
func (r *qwenRig) session(pid int, timeout time.Duration) snapshot {
	r.t.Helper()
	return r.bridge.AwaitOne("the qwen session of pid "+strconv.Itoa(pid), qwenSource, timeout, func(s snapshot) bool {
		return s.PID > 0 && proc.Descends(proc.Root, s.PID, pid)
	})
}

// checkf fails the test with the rig's chats and model log.
func (r *qwenRig) checkf(ok bool, format string, args ...any) {
	r.t.Helper()
	if !ok {
		r.t.Fatalf(format+"\nchats:\n%s\nmodel requests:\n%s\nbridge: %s", append(args, r.describeChats(), r.model.Log(), r.bridge.dump())...)
	}
}

// describeChats condenses the chats to one line per record (type,
// subtype, part kinds, tool status), for failure messages.
func (r *qwenRig) describeChats() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(r.home, ".qwen", "projects", "*", "chats", "*.jsonl"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.WriteString("chat " + filepath.Base(f) + ":\n")
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var rec struct {
				Type    string `json:"type"`
				Subtype string `json:"subtype"`
				Message struct {
					Parts []map[string]any `json:"parts"`
				} `json:"message"`
				ToolCallResult struct {
					Status string `json:"status"`
				} `json:"toolCallResult"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil {
				b.WriteString("  (not JSON)\n")
				continue
			}
			var kinds []string
			for _, p := range rec.Message.Parts {
				for k := range p {
					kinds = append(kinds, k)
				}
			}
			b.WriteString("  " + strings.TrimSpace(strings.Join([]string{rec.Type, rec.Subtype, strings.Join(kinds, ","), rec.ToolCallResult.Status}, " ")) + "\n")
		}
	}
	return b.String()
}

func TestQwenCodeTUI(t *testing.T) {
	enabled(t)
	col := qwenCLI.Label()
	scenario(t, col, "prompt answered", qwenPrompt)
	scenario(t, col, "approval: approve", func(t *testing.T) { qwenApproval(t, true) })
	scenario(t, col, "approval: deny", func(t *testing.T) { qwenApproval(t, false) })
	scenario(t, col, "interrupt before output", qwenInterrupt)
	scenario(t, col, "subagent", qwenSubagent)
	scenario(t, col, "two sessions, one cwd", qwenTwoSessions)
	scenario(t, col, "quit, resume", qwenResume)
	scenario(t, col, "kill -9", qwenKill)
	scenario(t, col, "bridge restart", qwenRestart)
}

// A prompt in the TUI: the session appears with the TUI's pid (from
// <id>.runtime.json) and goes running → done, completed.
func qwenPrompt(t *testing.T) {
	r := newQwenRig(t)
	r.model.Script(Step{Text: "Hello from the live model."})
	term := r.tui()
	pid := term.PID()
	prompt(term, "say hello")
	term.AwaitScreen(60*time.Second, "Hello from the live model.")
	s := r.session(pid, 20*time.Second)
	s = r.bridge.AwaitStatus(qwenSource, s.ID, "done", 20*time.Second)
	r.checkf(s.LastTurn == "completed" && s.Cwd == r.cwd && s.Title == "say hello" && s.Model == "mock-model", "done turn: %s", s)
	h := r.bridge.History(qwenSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "done"}) && turnsStarted(r.bridge.Events(qwenSource, s.ID)) == 1, "one prompt, one turn: statuses %v", h)
	ids := r.bridge.SessionsOf(qwenSource, "ancestorPid="+strconv.Itoa(pid))
	r.checkf(equal(ids, []string{s.ID}), "ancestorPid=%d lists %v", pid, ids)
}

// A shell command needs approval: the bridge shows waiting, naming the
// tool and its command; approving runs it and the turn completes,
// denying does not run it and the turn ends cancelled.
func qwenApproval(t *testing.T, approve bool) {
	r := newQwenRig(t)
	marker := filepath.Join(r.cwd, "marker.txt")
	r.model.Script(
		Step{Tool: &ToolCall{Name: "run_shell_command", Input: map[string]any{
			"command": "touch " + marker, "description": "Create the marker file"}}},
		Step{When: `"role":"tool"`, Text: "Finished with the file."},
	)
	term := r.tui()
	pid := term.PID()
	prompt(term, "make the marker")
	screen := term.AwaitScreen(60*time.Second, "Allow execution")
	s := r.session(pid, 20*time.Second)
	s = r.bridge.AwaitStatus(qwenSource, s.ID, "waiting", 20*time.Second)
	r.checkf(strings.Contains(s.WaitingFor, "run_shell_command") && strings.Contains(s.WaitingFor, "marker.txt") && !strings.Contains(s.WaitingFor, r.cwd),
		"waitingFor names the tool and its command, paths shortened: %q\n%s", s.WaitingFor, screen)
	if approve {
		// "Allow once" is the first option, selected.
		term.Keys("Enter")
		term.AwaitScreen(60*time.Second, "Finished with the file.")
		s = r.bridge.AwaitStatus(qwenSource, s.ID, "done", 20*time.Second)
		_, err := os.Stat(marker)
		r.checkf(err == nil && s.LastTurn == "completed", "approved: marker %v, %s", err, s)
	} else {
		term.Keys("Escape")
		term.AwaitNoScreen(30*time.Second, "Allow execution")
		s = r.bridge.AwaitStatus(qwenSource, s.ID, "done", 20*time.Second)
		_, err := os.Stat(marker)
		r.checkf(os.IsNotExist(err) && s.LastTurn == "interrupted", "denied: marker %v, %s", err, s)
	}
	r.checkf(s.WaitingFor == "", "no waitingFor once done: %s", s)
	h := r.bridge.History(qwenSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "waiting", "running", "done"}), "statuses %v", h)
}

// Escape while the model holds its reply: Qwen Code writes nothing at
// all (no record, no telemetry; its registry has no status), so the
// bridge cannot see the Escape and shows running until the next prompt,
// which ends the unanswered turn as cancelled before its own starts (a
// documented limit). The next turn completes.
func qwenInterrupt(t *testing.T) {
	r := newQwenRig(t)
	r.model.Script(Step{Hold: true}, Step{Text: "Second answer."})
	term := r.tui()
	pid := term.PID()
	prompt(term, "wait for it")
	r.model.WaitHolding(60 * time.Second)
	s := r.session(pid, 20*time.Second)
	s = r.bridge.AwaitStatus(qwenSource, s.ID, "running", 20*time.Second)
	term.Keys("Escape")
	r.model.AwaitDropped()
	// Escape puts the prompt back into the input box.
	term.AwaitScreen(20*time.Second, "wait for it")
	term.Keys("C-u")
	s = r.bridge.againCompletes(term, prompt, qwenSource, s.ID)
	h := r.bridge.History(qwenSource, s.ID)
	var outcomes []string
	for _, e := range r.bridge.Events(qwenSource, s.ID) {
		if e.Kind == "agent.done" {
			outcomes = append(outcomes, e.Outcome)
		}
	}
	r.checkf(equal(h, []string{"idle", "running", "done", "running", "done"}) && equal(outcomes, []string{"cancelled", "success"}),
		"statuses %v, turn outcomes %v", h, outcomes)
}

// A subagent (the agent tool; in the background, its default): Qwen asks
// before it starts one; the parent lists it running from its call, its
// turn ends while the subagent runs on, and the task notification marks
// it completed and starts the parent's next turn.
func qwenSubagent(t *testing.T) {
	r := newQwenRig(t)
	r.model.Script(
		Step{Text: "Delegating.", Tool: &ToolCall{Name: "agent", Input: map[string]any{
			"description": "Count the files", "prompt": "SUBTASK: count the files", "subagent_type": "general-purpose"}}},
		Step{When: "SUBTASK: count the files", Text: "There are no files.", Delay: 8 * time.Second},
		Step{When: `"role":"tool"`, Text: "The agent is working."},
		Step{When: "task-notification", Text: "The agent found no files."},
	)
	term := r.tui()
	pid := term.PID()
	prompt(term, "delegate the count")
	term.AwaitScreen(60*time.Second, "Do you want to proceed?")
	s := r.session(pid, 20*time.Second)
	r.bridge.Await("a listed subagent, its start waiting for approval", 20*time.Second, func() bool {
		s, _ = r.bridge.Session(qwenSource, s.ID)
		return len(s.Subagents) == 1 && s.Subagents[0].Status == "running" && s.Status == "waiting"
	})
	r.checkf(s.Subagents[0].Title == "Count the files" && s.Subagents[0].Type == "general-purpose" && s.WaitingFor == "Approve agent: Count the files", "subagent: %s", s)
	term.Keys("Enter")
	term.AwaitScreen(60*time.Second, "The agent is working.")
	r.bridge.Await("the parent's turn done, the subagent running on", 20*time.Second, func() bool {
		s, _ = r.bridge.Session(qwenSource, s.ID)
		return s.Status == "done" && len(s.Subagents) == 1 && s.Subagents[0].Status == "running" ||
			r.model.Left() == 0 // too late: the notification came
	})
	r.checkf(r.model.Left() > 0, "the subagent's end came before the parent's turn was seen done: %s", s)
	term.AwaitScreen(60*time.Second, "The agent found no files.")
	r.bridge.Await("the subagent completed and the parent done again", 20*time.Second, func() bool {
		s, _ = r.bridge.Session(qwenSource, s.ID)
		return len(s.Subagents) == 1 && s.Subagents[0].Status == "completed" && s.Status == "done" && turnsStarted(r.bridge.Events(qwenSource, s.ID)) == 2
	})
	for _, x := range r.bridge.Sessions(qwenSource) {
		r.checkf(x.ID == s.ID, "a subagent is never a session of its own: %s", x)
	}
}

// Two TUIs in one directory are two sessions, each with its own pid.
func qwenTwoSessions(t *testing.T) {
	r := newQwenRig(t)
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Hold: true})
	a, b := r.tui(), r.tui()
	pa, pb := a.PID(), b.PID()
	prompt(a, "first prompt")
	a.AwaitScreen(60*time.Second, "First answer.")
	prompt(b, "second prompt")
	r.model.WaitHolding(60 * time.Second)
	sa, sb := r.session(pa, 20*time.Second), r.session(pb, 20*time.Second)
	r.checkf(sa.ID != sb.ID, "two sessions: %s %s", sa, sb)
	sa = r.bridge.AwaitStatus(qwenSource, sa.ID, "done", 20*time.Second)
	sb = r.bridge.AwaitStatus(qwenSource, sb.ID, "running", 20*time.Second)
	r.checkf(sa.Cwd == r.cwd && sb.Cwd == r.cwd, "both in the project: %s %s", sa, sb)
	quit(a, "/quit")
	r.bridge.AwaitStatus(qwenSource, sa.ID, "exited", 20*time.Second)
	sb, _ = r.bridge.Session(qwenSource, sb.ID)
	r.checkf(sb.Status == "running", "the other session is untouched: %s", sb)
}

// /quit shows exited; `qwen --resume <id>` brings the same session back
// with the new pid, and its next turn is counted.
func qwenResume(t *testing.T) {
	r := newQwenRig(t)
	r.model.Script(Step{Text: "First answer."}, Step{Text: "Resumed answer."})
	term := r.tui()
	pid := term.PID()
	prompt(term, "first")
	term.AwaitScreen(60*time.Second, "First answer.")
	s := r.session(pid, 20*time.Second)
	r.bridge.AwaitStatus(qwenSource, s.ID, "done", 20*time.Second)
	quit(term, "/quit")
	r.bridge.AwaitStatus(qwenSource, s.ID, "exited", 20*time.Second)
	term2 := r.tui("--resume", s.ID)
	pid2 := term2.PID()
	r.bridge.Await("the resumed session with the new pid", 30*time.Second, func() bool {
		x, ok := r.bridge.Session(qwenSource, s.ID)
		return ok && x.PID > 0 && proc.Descends(proc.Root, x.PID, pid2) && x.Status != "exited"
	})
	prompt(term2, "second")
	term2.AwaitScreen(60*time.Second, "Resumed answer.")
	s = r.bridge.AwaitStatus(qwenSource, s.ID, "done", 20*time.Second)
	r.checkf(!r.bridge.Removed(qwenSource, s.ID) && turnsStarted(r.bridge.Events(qwenSource, s.ID)) == 2 && s.LastTurn == "completed",
		"resumed: %s removed=%v events %v", s, r.bridge.Removed(qwenSource, s.ID), r.bridge.Events(qwenSource, s.ID))
	for _, x := range r.bridge.Sessions(qwenSource) {
		r.checkf(x.ID == s.ID, "resume makes no second session: %s", x)
	}
}

// kill -9 in the middle of a turn: exited (the runtime file's pid, by
// pidfd).
func qwenKill(t *testing.T) {
	r := newQwenRig(t)
	r.model.Script(Step{Hold: true})
	term := r.tui()
	pid := term.PID()
	prompt(term, "never answered")
	r.model.WaitHolding(60 * time.Second)
	s := r.session(pid, 20*time.Second)
	r.bridge.AwaitStatus(qwenSource, s.ID, "running", 20*time.Second)
	// The agent is the relaunched child the session is bound to.
	if err := syscall.Kill(s.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s = r.bridge.AwaitStatus(qwenSource, s.ID, "exited", 10*time.Second)
	r.checkf(s.WaitingFor == "", "exited: %s", s)
}

// The bridge restarts while one TUI runs and another, in another
// directory, has quit: the restarted bridge shows the running one with
// the same pid, and the other ended at once, never alive. (The quit
// session was seen after a restart bound to nothing and not ended, in one
// directory and in two: the restarted bridge read its runtime file before
// its chat, ended it at the chat's first line, and the chat's turn, read
// next, showed it alive again — fixed in the source, with
// TestStaleRuntimeFileReadBeforeTheChat. The scenario keeps the TUIs
// apart, as Pi's and Gemini's do.)
func qwenRestart(t *testing.T) {
	r := newQwenRig(t)
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Text: "Second answer."})
	other := filepath.Join(filepath.Dir(r.cwd), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	a, b := r.tui(), r.tuiIn(other)
	pa, pb := a.PID(), b.PID()
	prompt(a, "first prompt")
	a.AwaitScreen(60*time.Second, "First answer.")
	prompt(b, "second prompt")
	b.AwaitScreen(60*time.Second, "Second answer.")
	sa, sb := r.session(pa, 20*time.Second), r.session(pb, 20*time.Second)
	sa = r.bridge.AwaitStatus(qwenSource, sa.ID, "done", 20*time.Second)
	r.bridge.AwaitStatus(qwenSource, sb.ID, "done", 20*time.Second)
	quit(b, "/quit")
	r.bridge.AwaitStatus(qwenSource, sb.ID, "exited", 20*time.Second)

	var wrong string
	r.bridge, wrong = r.bridge.restarted(t, r.home, qwenSource, sa.ID, sa.PID, sb.ID)
	r.checkf(wrong == "", "%s", wrong)
}
