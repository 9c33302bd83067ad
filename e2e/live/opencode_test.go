package live

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const opencodeSource = "opencode"

// opencodeCLI is the pinned opencode.
var opencodeCLI = agentCLI{Agent: "opencode", Pkg: "opencode-ai", Version: "1.18.33", Bin: "opencode"}

// opencodeAPI is Chat Completions as opencode uses it: its turns offer
// tools; its title request does not, and gets a short title.
type opencodeAPI struct{ chatAPI }

func (opencodeAPI) route(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if strings.HasSuffix(r.URL.Path, "/chat/completions") {
		chatAPI{}.reply(w, w.(http.Flusher), body, Step{Text: "Live test"}, 0)
		return true
	}
	return chatAPI{}.route(w, r, body)
}

// opencodeRig is one private opencode install: a home, a project dir, a
// scripted Chat Completions server and a bridge watching the home.
type opencodeRig struct {
	t      *testing.T
	bin    string // the native binary (the npm command is a Node wrapper)
	home   string
	data   string // ~/.local/share/opencode: the database and log/
	cwd    string
	model  *modelServer
	bridge *bridge
}

// newOpencodeRig writes opencode.json (the mock provider; bash permission
// as given: "ask" or "allow") and starts the bridge.
func newOpencodeRig(t *testing.T, bash string) *opencodeRig {
	t.Helper()
	enabled(t)
	bin := install(t, opencodeCLI)
	root := filepath.Dir(filepath.Dir(bin))
	if native, _ := filepath.Glob(filepath.Join(root, "opencode-linux-*", "bin", "opencode")); len(native) > 0 {
		bin = native[0]
	}
	dir := t.TempDir()
	r := &opencodeRig{t: t, bin: bin, home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "project")}
	r.data = filepath.Join(r.home, ".local", "share", "opencode")
	cfgDir := filepath.Join(r.home, ".config", "opencode")
	for _, d := range []string{cfgDir, r.cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	keepHome(t, r.home)
	r.model = newModelServer(t, opencodeAPI{})
	cfg, _ := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"mock": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"options": map[string]any{"baseURL": r.model.URL + "/v1", "apiKey": "dummy"},
			"models":  map[string]any{"mock-model": map[string]any{"tool_call": true}},
		}},
		"model": "mock/mock-model", "small_model": "mock/mock-model",
		"autoupdate": false, "share": "disabled",
		"permission": map[string]any{"bash": bash},
	})
	if err := os.WriteFile(filepath.Join(cfgDir, "opencode.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	r.bridge = startBridge(t, r.home)
	return r
}

func (r *opencodeRig) env() []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + r.home,
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
		"SHELL=/bin/bash",
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1",
	}
}

// tui starts the TUI in tmux and waits for its input box.
func (r *opencodeRig) tui(args ...string) *terminal {
	r.t.Helper()
	term := openTerminal(r.t, r.cwd, r.env(), append([]string{r.bin}, args...)...)
	term.AwaitScreen(60*time.Second, "ctrl+p")
	return term
}

// headless runs `opencode run --auto prompt` to its end.
func (r *opencodeRig) headless(prompt string) string {
	r.t.Helper()
	cmd := exec.Command(r.bin, "run", "--auto", prompt)
	cmd.Dir, cmd.Env = r.cwd, r.env()
	cmd.WaitDelay = 5 * time.Second
	out, err := tracked(r.t, cmd).CombinedOutput()
	if err != nil {
		r.t.Fatalf("opencode run: %v\n%s\nmodel requests:\n%s", err, out, r.model.Log())
	}
	return string(out)
}

// checkf fails the test with the model's requests and opencode's log.
func (r *opencodeRig) checkf(ok bool, format string, args ...any) {
	r.t.Helper()
	if !ok {
		log, _ := os.ReadFile(filepath.Join(r.data, "log", "opencode.log"))
		r.t.Fatalf(format+"\nsessions: %s\nmodel requests:\n%s\nopencode.log (last lines):\n%s",
			append(args, r.bridge.dump(), r.model.Log(), tail(string(log), 15))...)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = bounded(l, 240)
	}
	return strings.Join(lines, "\n")
}

// root waits for the one opencode session matching pred.
func (r *opencodeRig) root(what string, timeout time.Duration, pred func(snapshot) bool) snapshot {
	r.t.Helper()
	return r.bridge.AwaitOne(what, opencodeSource, timeout, pred)
}

// kinds lists a session's lifecycle events as kind[:name][:outcome].
func kinds(evs []lifecycle) []string {
	var out []string
	for _, e := range evs {
		k := e.Kind
		if e.Name != "" {
			k += ":" + e.Name
		}
		if e.Outcome != "" {
			k += ":" + e.Outcome
		}
		out = append(out, k)
	}
	return out
}

// inOrder reports whether want occur in evs in that order (others between).
func inOrder(evs []string, want ...string) bool {
	i := 0
	for _, e := range evs {
		if i < len(want) && e == want[i] {
			i++
		}
	}
	return i == len(want)
}

// metric reads one unlabelled value from the bridge's GET /metrics.
func (b *bridge) metric(name string) float64 {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("GET /metrics: %v", err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	b.t.Fatalf("GET /metrics: no %s (%s)", name, res.Status)
	return 0
}

// dbState is the size and modification time of the database and its
// -wal: what changes when opencode commits.
func (r *opencodeRig) dbState() string {
	var b strings.Builder
	for _, f := range []string{"opencode.db", "opencode.db-wal"} {
		if fi, err := os.Stat(filepath.Join(r.data, f)); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d ", f, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

// quietQueries checks, through GET /metrics, that the bridge runs no
// query while opencode's database does not change: once the files have
// been still for longer than the source's trailing reads (1.3 s), an
// interval in which they stay still must see no query. The TUI may still
// write (it saves its state now and then): such an interval is not
// counted, and another one is taken.
func (r *opencodeRig) quietQueries() {
	r.t.Helper()
	const gap = 2 * time.Second
	deadline := time.Now().Add(60 * time.Second)
	st, q, still := r.dbState(), r.bridge.metric("agentbridge_opencode_queries_total"), false
	for time.Now().Before(deadline) {
		time.Sleep(gap)
		st2, q2 := r.dbState(), r.bridge.metric("agentbridge_opencode_queries_total")
		if st2 == st && still {
			r.checkf(q2 == q, "while the database did not change the bridge ran %v queries; want none", q2-q)
			return
		}
		still = st2 == st
		st, q = st2, q2
	}
	r.t.Fatalf("opencode's database kept changing for a minute: %s", r.dbState())
}

func TestOpencode(t *testing.T) {
	enabled(t)
	c := opencodeCLI.Label()
	scenario(t, c, "prompt answered", opencodePrompt)
	scenario(t, c, "prompt answered (headless)", opencodeHeadless)
	scenario(t, c, "approval: approve", func(t *testing.T) { opencodeApproval(t, true) })
	scenario(t, c, "approval: deny", func(t *testing.T) { opencodeApproval(t, false) })
	scenario(t, c, "interrupt before output", opencodeInterrupt)
	scenario(t, c, "subagent", opencodeSubagent)
	scenario(t, c, "two sessions, one cwd", opencodeTwoSessions)
	scenario(t, c, "quit, resume", opencodeResume)
	scenario(t, c, "kill -9", opencodeKill)
	scenario(t, c, "bridge restart", opencodeRestart)
}

// gone is a screen condition: text is not shown.
func gone(text string) func(string) bool {
	return func(x string) bool { return !strings.Contains(x, text) }
}

// markerSteps: a bash call that writes marker.txt, then an answer once
// the tool's result is back.
func markerSteps(answer string) []Step {
	return []Step{
		{Text: "Writing the marker.", Tool: &ToolCall{Name: "bash", Input: map[string]any{
			"command": "echo hi > marker.txt", "description": "Write the marker"}}},
		{When: `"role":"tool"`, Text: answer},
	}
}

// A prompt with a tool call in the TUI: the session (created by the
// prompt) goes idle → running → done, with the bash tool started and
// finished inside the turn, cwd, title and model; then the idle bridge
// runs no query while the database does not change.
func opencodePrompt(t *testing.T) {
	r := newOpencodeRig(t, "allow")
	r.model.Script(markerSteps("The marker is written.")...)
	term := r.tui()
	prompt(term, "write the marker")
	term.AwaitScreen(60*time.Second, "The marker is written.")
	s := r.root("the answered session", 20*time.Second, func(s snapshot) bool { return s.Status == "done" })
	_, err := os.Stat(filepath.Join(r.cwd, "marker.txt"))
	r.checkf(err == nil, "the tool ran: %v", err)
	r.checkf(s.LastTurn == "completed" && s.Cwd == r.cwd && s.Title == "Live test" && s.Model == "mock-model", "done turn: %s", s)
	r.checkf(s.PID == term.PID(), "the session carries its opencode's pid %d: %s", term.PID(), s)
	h, evs := r.bridge.History(opencodeSource, s.ID), kinds(r.bridge.Events(opencodeSource, s.ID))
	r.checkf(equal(h, []string{"idle", "running", "done"}), "statuses %v", h)
	r.checkf(inOrder(evs, "session.started", "turn.started", "tool.started:bash", "tool.finished:success", "agent.done:success") &&
		turnsStarted(r.bridge.Events(opencodeSource, s.ID)) == 1, "events %v", evs)
	r.quietQueries()
}

// opencode run --auto: the same, headless; the session ends with the run.
func opencodeHeadless(t *testing.T) {
	r := newOpencodeRig(t, "allow")
	r.model.Script(markerSteps("Headless answer.")...)
	out := r.headless("write the marker")
	r.checkf(strings.Contains(out, "Headless answer."), "opencode run printed %q", out)
	// The run has exited: its session ended with it, its turn completed,
	// and it carried the run's pid.
	s := r.root("the answered session, ended", 20*time.Second, func(s snapshot) bool { return s.Status == "exited" })
	evs := kinds(r.bridge.Events(opencodeSource, s.ID))
	r.checkf(s.PID != 0, "the session never carried its opencode's pid: %s", s)
	r.checkf(s.LastTurn == "completed" && s.Cwd == r.cwd && inOrder(evs, "turn.started", "tool.started:bash", "tool.finished:success", "agent.done:success"),
		"headless: %s %v", s, evs)
}

// "permission": {"bash": "ask"}: opencode asks before the bash call. The
// database does not say so (the tool part stays running); its log's
// "asking … permission=bash patterns=[…]" line does: the bridge shows
// waiting, naming the permission and the command, and running again once
// it is answered. Allow once runs the command and the turn completes;
// Reject (Esc) fails the tool and opencode stops the turn: cancelled.
func opencodeApproval(t *testing.T, approve bool) {
	r := newOpencodeRig(t, "ask")
	r.model.Script(markerSteps("The marker is written.")...)
	term := r.tui()
	prompt(term, "write the marker")
	term.AwaitScreen(60*time.Second, "Permission required", "Allow once")
	s := r.root("the waiting session", 20*time.Second, func(s snapshot) bool { return s.Status == "waiting" })
	r.checkf(s.WaitingFor == "bash: echo hi > marker.txt", "waitingFor names the permission and its pattern: %q", s.WaitingFor)
	log, _ := os.ReadFile(filepath.Join(r.data, "log", "opencode.log"))
	r.checkf(strings.Contains(string(log), "message=asking") && strings.Contains(string(log), "permission=bash"),
		"opencode logged the request")
	if approve {
		pressUntil(term, "Enter", gone("Permission required")) // Allow once is selected
		term.AwaitScreen(60*time.Second, "The marker is written.")
	} else {
		pressUntil(term, "Escape", gone("Permission required")) // Reject
	}
	s = r.bridge.AwaitStatus(opencodeSource, s.ID, "done", 30*time.Second)
	_, err := os.Stat(filepath.Join(r.cwd, "marker.txt"))
	evs := kinds(r.bridge.Events(opencodeSource, s.ID))
	if approve {
		r.checkf(err == nil && s.LastTurn == "completed" && inOrder(evs, "tool.started:bash", "wait.started", "wait.finished", "tool.finished:success", "agent.done:success"),
			"approved: marker %v, %s, events %v", err, s, evs)
	} else {
		r.checkf(os.IsNotExist(err) && s.LastTurn == "interrupted" && inOrder(evs, "tool.started:bash", "wait.started", "wait.finished", "tool.finished:error", "agent.done:cancelled"),
			"rejected: marker %v, %s, events %v", err, s, evs)
	}
	r.checkf(s.WaitingFor == "", "no waitingFor once done: %s", s)
	h := r.bridge.History(opencodeSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "waiting", "running", "done"}), "statuses %v", h)
}

// Esc twice ("esc again to interrupt") before the model sent anything:
// opencode ends the assistant message with MessageAbortedError; the
// bridge ends the turn as cancelled, and the next prompt is a turn of its
// own that completes.
func opencodeInterrupt(t *testing.T) {
	r := newOpencodeRig(t, "allow")
	r.model.Script(Step{Hold: true}, Step{Text: "Second answer."})
	term := r.tui()
	prompt(term, "wait for it")
	r.model.WaitHolding(60 * time.Second)
	s := r.root("the running session", 20*time.Second, func(s snapshot) bool { return s.Status == "running" })
	term.AwaitScreen(20*time.Second, "esc interrupt")
	pressUntil(term, "Escape", func(x string) bool { return strings.Contains(x, "esc again to interrupt") })
	term.Keys("Escape")
	r.model.AwaitDropped()
	s = r.bridge.AwaitStatus(opencodeSource, s.ID, "done", 20*time.Second)
	r.checkf(s.LastTurn == "interrupted", "an interrupted turn is cancelled: %s", s)
	s = r.bridge.againCompletes(term, prompt, opencodeSource, s.ID)
	h := r.bridge.History(opencodeSource, s.ID)
	r.checkf(equal(h, []string{"idle", "running", "done", "running", "done"}), "statuses %v", h)
}

// The task tool starts a subagent: a second session whose parent_id is
// the first. The bridge lists it under its parent (running, then
// completed), never as a second root.
func opencodeSubagent(t *testing.T) {
	r := newOpencodeRig(t, "allow")
	r.model.Script(
		Step{Text: "Delegating.", Tool: &ToolCall{Name: "task", Input: map[string]any{
			"description": "Count the files", "prompt": "SUBTASK: count the files", "subagent_type": "general"}}},
		Step{When: "SUBTASK: count the files", Text: "There are no files.", Delay: 2 * time.Second},
		Step{When: `"role":"tool"`, Text: "The agent found no files."},
	)
	term := r.tui()
	prompt(term, "delegate the count")
	s := r.root("a session with a running subagent", 60*time.Second, func(s snapshot) bool {
		return len(s.Subagents) == 1 && s.Subagents[0].Status == "running"
	})
	sub := s.Subagents[0]
	r.checkf(sub.Type == "general" && strings.Contains(sub.Title, "Count the files") && sub.ID != s.ID, "subagent: %s", s)
	term.AwaitScreen(60*time.Second, "The agent found no files.")
	r.bridge.Await("the subagent completed and its parent done", 30*time.Second, func() bool {
		s, _ = r.bridge.Session(opencodeSource, s.ID)
		return s.Status == "done" && len(s.Subagents) == 1 && s.Subagents[0].Status == "completed"
	})
	r.checkf(s.LastTurn == "completed", "parent: %s", s)
	for _, x := range r.bridge.Sessions(opencodeSource) {
		r.checkf(x.ID == s.ID, "a subagent is never a session of its own: %s", x)
	}
	r.checkf(len(r.bridge.Events(opencodeSource, sub.ID)) == 0 && !r.bridge.Removed(opencodeSource, sub.ID),
		"the subagent had events of its own: %v", r.bridge.Events(opencodeSource, sub.ID))
}

// Two TUIs in one directory: two sessions, each with its own turn.
func opencodeTwoSessions(t *testing.T) {
	r := newOpencodeRig(t, "allow")
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Hold: true})
	a, b := r.tui(), r.tui()
	prompt(a, "first prompt")
	a.AwaitScreen(60*time.Second, "First answer.")
	sa := r.root("the first session done", 20*time.Second, func(s snapshot) bool { return s.Status == "done" })
	prompt(b, "second prompt")
	r.model.WaitHolding(60 * time.Second)
	sb := r.root("the second session running", 20*time.Second, func(s snapshot) bool { return s.Status == "running" })
	r.checkf(sa.ID != sb.ID && sa.Cwd == r.cwd && sb.Cwd == r.cwd, "two sessions in the project: %s %s", sa, sb)
	sa, _ = r.bridge.Session(opencodeSource, sa.ID)
	r.checkf(sa.Status == "done" && sa.LastTurn == "completed" && len(r.bridge.Sessions(opencodeSource)) == 2,
		"the first session is untouched by the second: %s", sa)
	sb, _ = r.bridge.Session(opencodeSource, sb.ID)
	r.checkf(sa.PID == a.PID() && sb.PID == b.PID(), "each session carries its own TUI's pid (%d, %d): %s %s", a.PID(), b.PID(), sa, sb)
	quit(a, "/exit")
	r.bridge.AwaitStatus(opencodeSource, sa.ID, "exited", 20*time.Second)
	sb, _ = r.bridge.Session(opencodeSource, sb.ID)
	r.checkf(sb.Status == "running" && sb.PID == b.PID(), "the other session is untouched by the first one's exit: %s", sb)
}

// /exit, then `opencode -s <id>` (the command opencode prints on exit):
// the same session takes the next turn; it is never removed, and no
// second session appears.
func opencodeResume(t *testing.T) {
	r := newOpencodeRig(t, "allow")
	r.model.Script(Step{Text: "First answer."}, Step{Text: "Resumed answer."})
	term := r.tui()
	prompt(term, "first")
	term.AwaitScreen(60*time.Second, "First answer.")
	s := r.root("the first turn done", 20*time.Second, func(s snapshot) bool { return s.Status == "done" })
	quit(term, "/exit")
	screen, ok := term.waitScreen(10*time.Second, func(x string) bool { return strings.Contains(x, "opencode -s "+s.ID) })
	r.checkf(ok, "opencode names the session to continue:\n%s", screen)
	term2 := r.tui("-s", s.ID)
	prompt(term2, "second")
	term2.AwaitScreen(60*time.Second, "Resumed answer.")
	r.bridge.Await("the resumed turn to complete", 20*time.Second, func() bool {
		x, _ := r.bridge.Session(opencodeSource, s.ID)
		return turnsStarted(r.bridge.Events(opencodeSource, s.ID)) == 2 && x.Status == "done"
	})
	s, _ = r.bridge.Session(opencodeSource, s.ID)
	r.checkf(!r.bridge.Removed(opencodeSource, s.ID) && s.LastTurn == "completed", "resumed: %s", s)
	r.checkf(s.PID == term2.PID(), "the resumed session carries the new opencode's pid %d: %s", term2.PID(), s)
	r.checkf(contains(r.bridge.History(opencodeSource, s.ID), "exited"), "the first TUI's /exit ended the session before the resume: %v",
		r.bridge.History(opencodeSource, s.ID))
	for _, x := range r.bridge.Sessions(opencodeSource) {
		r.checkf(x.ID == s.ID, "resume makes no second session: %s", x)
	}
}

// kill -9 in the middle of a turn: the session, bound to its TUI's
// opencode process (found by its directory), ends with it; with nothing
// writing, the bridge queries nothing.
func opencodeKill(t *testing.T) {
	r := newOpencodeRig(t, "allow")
	r.model.Script(Step{Hold: true})
	term := r.tui()
	pid := term.PID()
	prompt(term, "never answered")
	r.model.WaitHolding(60 * time.Second)
	s := r.root("the running session", 20*time.Second, func(s snapshot) bool { return s.Status == "running" })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitGone(pid, 10*time.Second)
	r.model.AwaitDropped()
	s = r.bridge.AwaitStatus(opencodeSource, s.ID, "exited", 20*time.Second)
	r.checkf(s.PID == pid && !r.bridge.Removed(opencodeSource, s.ID), "after kill -9: %s", s)
	r.quietQueries()
}

// The bridge restarts while one TUI runs and another has quit: the
// restarted bridge shows the running one with the same pid, and the
// other ended at once.
func opencodeRestart(t *testing.T) {
	r := newOpencodeRig(t, "allow")
	r.model.Script(Step{When: "first prompt", Text: "First answer."}, Step{When: "second prompt", Text: "Second answer."})
	a, b := r.tui(), r.tui()
	prompt(a, "first prompt")
	a.AwaitScreen(60*time.Second, "First answer.")
	sa := r.root("the first session done", 20*time.Second, func(s snapshot) bool { return s.Status == "done" && s.PID == a.PID() })
	prompt(b, "second prompt")
	b.AwaitScreen(60*time.Second, "Second answer.")
	sb := r.bridge.AwaitOne("the second session done", opencodeSource, 20*time.Second, func(s snapshot) bool {
		return s.ID != sa.ID && s.Status == "done" && s.PID == b.PID()
	})
	pb := b.PID()
	quit(b, "/exit")
	awaitGone(pb, 10*time.Second)
	r.bridge.AwaitStatus(opencodeSource, sb.ID, "exited", 20*time.Second)

	var wrong string
	r.bridge, wrong = r.bridge.restarted(t, r.home, opencodeSource, sa.ID, a.PID(), sb.ID)
	r.checkf(wrong == "", "%s", wrong)
}
