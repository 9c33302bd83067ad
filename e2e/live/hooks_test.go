package live

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
)

// hookEnv is what the CLI's hook command needs to find the rig's bridge:
// its address and token, as for every client command.
func hookEnv(b *bridge) []string {
	return []string{"AGENTBRIDGE_ADDR=" + strings.TrimPrefix(b.base, "http://"), "AGENTBRIDGE_TOKEN=" + b.token}
}

// installHooks runs `agentbridge hooks install --harness harness` for real
// with the rig's home, as a user would, and returns what it printed.
func installHooks(t *testing.T, home, harness string, env ...string) string {
	t.Helper()
	return installHooksWith(t, home, harness, nil, env...)
}

// installHooksWith is installHooks with more arguments (--answer).
func installHooksWith(t *testing.T, home, harness string, args []string, env ...string) string {
	t.Helper()
	cmd := exec.Command(agentbridgeBin(t), append([]string{"hooks", "install", "--harness", harness}, args...)...)
	cmd.Env = append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
	}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("agentbridge hooks install --harness %s %v: %v\n%s", harness, args, err, out)
	}
	dumpHooks(t, home)
	return string(out)
}

// dumpHooks, with AGENTBRIDGE_LIVE_HOOKDUMP=dir, adds beside the bridge's
// hook one that appends each payload to dir/<event>.json: how the
// fixtures of the real payloads in hooks/testdata were captured.
func dumpHooks(t *testing.T, home string) {
	dir := os.Getenv("AGENTBRIDGE_LIVE_HOOKDUMP")
	if dir == "" {
		return
	}
	os.MkdirAll(dir, 0o755)
	files, _ := filepath.Glob(filepath.Join(home, "*", "settings.json"))
	more, _ := filepath.Glob(filepath.Join(home, "*", "hooks.json"))
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var doc map[string]any
		if json.Unmarshal(b, &doc) != nil {
			continue
		}
		hs, _ := doc["hooks"].(map[string]any)
		for ev, groups := range hs {
			out := shellQuote(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+ev+".json"))
			g, _ := groups.([]any)
			hs[ev] = append(g, map[string]any{"hooks": []any{map[string]any{
				"type": "command", "command": "cat >> " + out + "; echo >> " + out, "timeout": 5}}})
		}
		b, _ = json.MarshalIndent(doc, "", "  ")
		os.WriteFile(f, b, 0o600)
	}
}

// screenClock polls the terminal every 10 ms (the test's eye, not the
// product's) until ok holds for the screen. It returns when the capture
// that first saw it started (the screen is read during that capture), and
// how long before that the previous capture, which did not see it, had
// started: the dialog appeared within that gap.
func screenClock(term *terminal, timeout time.Duration, ok func(string) bool) (at time.Time, gap time.Duration, screen string, seen bool) {
	deadline := time.Now().Add(timeout)
	var prev time.Time
	for {
		start := time.Now()
		s := term.Screen()
		if ok(s) {
			return start, start.Sub(prev), s, true
		}
		if start.After(deadline) {
			return time.Time{}, 0, s, false
		}
		prev = start
		time.Sleep(10 * time.Millisecond)
	}
}

// The hook scenarios: each pinned CLI with the bridge's hooks installed
// by `agentbridge hooks install` into its throwaway home, so that the CLI
// runs the real `agentbridge hook` command. A tool that needs approval
// must show `waiting` with a reason naming the tool within hookBudget of
// the dialog appearing on screen (for Claude Code, which runs the hook as
// it draws the dialog and at times 100 ms or more after: within
// hookBudget of the later of the two, the end-to-end time logged and in
// the table), and the wait must end when the dialog is answered:
// approved, denied, or interrupted. Without hooks the bridge
// behaves as before: that is what the Claude Code and Codex scenarios
// check (their rigs install no hooks).
func TestHooks(t *testing.T) {
	enabled(t)
	for _, c := range claudeCLIs {
		t.Run("claude-code/"+c.Version, func(t *testing.T) {
			lat := &latencies{}
			for _, a := range hookAnswers {
				scenario(t, c.Label(), "hooks: "+string(a), func(t *testing.T) { lat.add(claudeHooked(t, c, a)) })
			}
			lat.record(c.Label())
			for _, w := range answerWays {
				scenario(t, c.Label(), "hooks answer: "+string(w), func(t *testing.T) { claudeAnswered(t, c, w) })
			}
		})
	}
	for _, c := range codexCLIs {
		for _, daemon := range []bool{true, false} {
			mode := "daemon"
			if !daemon {
				mode = "no-daemon"
			}
			col := c.Label() + " (" + mode + ")"
			t.Run("codex/"+c.Version+"/"+mode, func(t *testing.T) {
				lat := &latencies{}
				for _, a := range hookAnswers {
					scenario(t, col, "hooks: "+string(a), func(t *testing.T) { lat.add(codexHooked(t, c, daemon, a)) })
				}
				lat.record(col)
				for _, w := range answerWays {
					scenario(t, col, "hooks answer: "+string(w), func(t *testing.T) { codexAnswered(t, c, daemon, w) })
				}
			})
		}
	}
}

// answer is how a scenario answers the permission dialog.
type answer string

const (
	approve   answer = "approve"
	deny      answer = "deny"
	interrupt answer = "interrupt"
)

var hookAnswers = []answer{approve, deny, interrupt}

// hookBudget: the bridge shows waiting at most this long after the
// permission dialog appears on screen.
const hookBudget = 100 * time.Millisecond

// latency is one measured prompt → waiting: end to end, from the dialog
// on screen to waiting on the bridge's stream (0 when the stream came
// first), and the bridge's share of it, counted from when the dialog was on
// screen or the agent ran the hook, whichever was later.
type latency struct {
	total, bridge time.Duration
}

// latencies collects the latencies of one CLI, for the table's row
// "hooks: prompt → waiting (max)".
type latencies struct {
	mu sync.Mutex
	l  []latency
}

func (l *latencies) add(d latency, ok bool) {
	if !ok {
		return
	}
	l.mu.Lock()
	l.l = append(l.l, d)
	l.mu.Unlock()
}

func (l *latencies) record(column string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.l) == 0 {
		return
	}
	var worst latency
	for _, d := range l.l {
		worst.total, worst.bridge = max(worst.total, d.total), max(worst.bridge, d.bridge)
	}
	record(column, "hooks: prompt → waiting (max)", fmt.Sprintf("%d ms (bridge %d ms)", worst.total.Milliseconds(), worst.bridge.Milliseconds()))
}

// hookedPrompt is a permission dialog the scenario is waiting for.
type hookedPrompt struct {
	source string
	b      *bridge
	term   *terminal
	dialog string            // text on screen while the dialog is up
	reason func(string) bool // what waitingFor must say
	// late: the agent may run its PermissionRequest hook after it drew the
	// dialog (Claude Code runs it as it draws); then only the bridge's
	// share of the latency is held to hookBudget (the agent's lag is
	// logged). Codex runs it before it draws.
	late bool
}

// await waits for the dialog on screen and for the bridge's waiting, and
// returns the session and how long after the dialog's first appearance
// the bridge's stream delivered waiting with the reason (0 when it came
// first: the hook ran before the CLI drew its dialog).
func (p hookedPrompt) await(t *testing.T) (snapshot, latency) {
	t.Helper()
	var s snapshot
	var ran int64 // when the agent ran the hook: the wait's occurredAt
	// hooked: the session shows the wait a hook opened (its wait id is
	// the fold's "hook-…"), with the reason.
	hooked := func() bool {
		for _, x := range p.b.Sessions(p.source) {
			evs := p.b.Events(p.source, x.ID)
			if x.Status == "waiting" && p.reason(x.WaitingFor) && openHookWait(evs) {
				s = x
				for _, e := range evs {
					if e.Kind == "wait.started" && strings.HasPrefix(e.WaitID, "hook-") {
						ran = e.OccurredAt
					}
				}
				return true
			}
		}
		return false
	}
	// other: the session shows waiting from the journal or the registry.
	other := func() bool {
		for _, x := range p.b.Sessions(p.source) {
			for _, e := range p.b.Events(p.source, x.ID) {
				if e.Kind == "wait.started" && !strings.HasPrefix(e.WaitID, "hook-") {
					return true
				}
			}
		}
		return false
	}
	hookedAt, otherAt := p.b.stamp(t, hooked), p.b.stamp(t, other)
	shownAt, gap, screen, ok := screenClock(p.term, 90*time.Second, func(x string) bool { return strings.Contains(x, p.dialog) })
	if !ok {
		t.Fatalf("the terminal never showed %q; it shows:\n%s", p.dialog, screen)
	}
	select {
	case <-hookedAt.seen:
	case <-time.After(20 * time.Second):
		t.Fatalf("the hook's wait with a reason naming the tool: not within 20s\n%s", p.b.waits(p.source))
	}
	ranAt := time.UnixMilli(ran)
	from := shownAt
	if ranAt.After(from) {
		from = ranAt
	}
	lat := latency{total: max(hookedAt.When().Sub(shownAt), 0), bridge: max(hookedAt.When().Sub(from), 0)}
	note := "none"
	if at := otherAt.When(); !at.IsZero() {
		note = fmt.Sprintf("%+dms", at.Sub(shownAt).Milliseconds())
	}
	t.Logf("dialog on screen at %s (not %v before); the agent ran the hook at %+dms; its waiting %q on the stream at %+dms (latency %v); the journal's or registry's wait: %s",
		shownAt.Format("15:04:05.000"), gap.Round(time.Millisecond), ran-shownAt.UnixMilli(), s.WaitingFor,
		hookedAt.When().Sub(shownAt).Milliseconds(), lat.total.Round(time.Millisecond), note)
	switch {
	case lat.bridge > hookBudget:
		t.Errorf("waiting came %v after the dialog appeared and the hook ran (budget %v)", lat.bridge, hookBudget)
	case lat.total > hookBudget && !p.late:
		t.Errorf("waiting came %v after the dialog appeared (budget %v)", lat.total, hookBudget)
	case lat.total > hookBudget:
		t.Logf("over budget end to end: the agent ran its hook %v after it drew the dialog; the bridge took %v", ranAt.Sub(shownAt), lat.bridge)
	}
	if from := p.b.observesWaiting(p.source); from != "hooks" {
		t.Errorf("observes.waiting of %s is from %q, want hooks", p.source, from)
	}
	return s, lat
}

// answer presses key at the dialog and checks the end: approved, the
// command ran (marker exists) and the turn completed; denied or
// interrupted, it did not run; either way the wait ended (waitEnded).
func (p hookedPrompt) answer(t *testing.T, s snapshot, a answer, key, marker string, checkf func(bool, string, ...any)) {
	t.Helper()
	press(p.term, key, p.dialog)
	if a == approve {
		p.term.AwaitScreen(60*time.Second, "Finished with the file.")
	}
	s = p.b.AwaitStatus(p.source, s.ID, "done", 30*time.Second)
	_, err := os.Stat(marker)
	if a == approve {
		checkf(err == nil && s.LastTurn == "completed", "approved: marker %v, %s", err, s)
	} else {
		checkf(os.IsNotExist(err), "%s: marker %v, %s", a, err, s)
	}
	waitEnded(t, p.b, p.source, s, a)
}

// openWaits returns the ids of the waits open at the end of evs:
// agent.done and agent.exited end every wait, as the fold does.
func openWaits(evs []lifecycle) map[string]bool {
	open := map[string]bool{}
	for _, e := range evs {
		switch e.Kind {
		case "wait.started":
			open[e.WaitID] = true
		case "wait.finished":
			delete(open, e.WaitID)
		case "agent.done", "agent.exited":
			clear(open)
		}
	}
	return open
}

// openHookWait reports whether a wait a hook opened is open at the end of
// evs.
func openHookWait(evs []lifecycle) bool {
	for id := range openWaits(evs) {
		if strings.HasPrefix(id, "hook-") {
			return true
		}
	}
	return false
}

// stamp watches the bridge's state from now on and tells when cond first
// held for it as its stream delivered it: the follower closes b.changed on
// every event it applies, and the watcher wakes on it. at is zero until
// then; seen is closed then.
type stamp struct {
	seen chan struct{}
	at   time.Time // set before seen is closed
}

func (b *bridge) stamp(t *testing.T, cond func() bool) *stamp {
	st := &stamp{seen: make(chan struct{})}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			b.mu.Lock()
			ch := b.changed
			b.mu.Unlock()
			if cond() {
				st.at = time.Now()
				close(st.seen)
				return
			}
			select {
			case <-ch:
			case <-stop:
				return
			case <-b.done:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return st
}

// When returns when cond held (zero if it has not).
func (st *stamp) When() time.Time {
	select {
	case <-st.seen:
		return st.at
	default:
		return time.Time{}
	}
}

// observesWaiting is where GET /v1/sources says the source's waiting
// comes from ("" when it does not say).
func (b *bridge) observesWaiting(source string) string {
	req, _ := http.NewRequest(http.MethodGet, b.base+"/v1/sources", nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	var body struct {
		Sources []struct {
			ID       string                         `json:"id"`
			Observes map[string]agentbridge.Observe `json:"observes"`
		} `json:"sources"`
	}
	if json.NewDecoder(res.Body).Decode(&body) != nil {
		return ""
	}
	for _, s := range body.Sources {
		if s.ID == source {
			return s.Observes["waiting"].From
		}
	}
	return ""
}

// press presses key at the dialog until the dialog is gone: a key pressed
// while it is still drawing can be lost (it is read only while the dialog
// is up).
func press(term *terminal, key, dialog string) {
	term.t.Helper()
	for i := 0; ; i++ {
		term.Keys(key)
		if _, gone := term.waitScreen(3*time.Second, func(x string) bool { return !strings.Contains(x, dialog) }); gone {
			return
		}
		if i == 3 {
			term.AwaitNoScreen(time.Second, dialog)
		}
	}
}

// waitEnded checks that the session's wait ended: after its last waiting
// it went on (running, for an approval) and is done, without waitingFor,
// and no wait started again after the last one finished (a late hook never
// brings it back).
func waitEnded(t *testing.T, b *bridge, source string, s snapshot, a answer) {
	t.Helper()
	h := b.History(source, s.ID)
	last := slices.Index(h, "waiting")
	if last < 0 || h[len(h)-1] != "done" || s.WaitingFor != "" {
		t.Fatalf("the wait did not end: statuses %v, %s\n%s", h, s, b.dump())
	}
	for i := len(h) - 1; i >= 0; i-- {
		if h[i] == "waiting" {
			last = i
			break
		}
	}
	if a == approve && (last+1 >= len(h) || h[last+1] != "running") {
		t.Fatalf("approved: running after waiting, statuses %v", h)
	}
	evs := b.Events(source, s.ID)
	if len(openWaits(evs)) > 0 {
		t.Fatalf("a wait is open after the answer: %v", evs)
	}
	t.Logf("statuses %v, last turn %s", h, s.LastTurn)
}

// claudeHooked: Claude Code asks to run a Bash command; the scenario
// answers with a.
func claudeHooked(t *testing.T, c agentCLI, a answer) (latency, bool) {
	r := newClaudeRig(t, c)
	out := installHooks(t, r.home, "claude-code", "CLAUDE_CONFIG_DIR="+r.config)
	r.checkf(strings.Contains(out, "settings.json"), "hooks install: %s", out)
	marker := filepath.Join(r.cwd, "marker")
	r.model.Script(
		Step{Text: "I will create the file.", Tool: &ToolCall{Name: "Bash", Input: map[string]any{
			"command": "touch " + marker, "description": "Create the marker file"}}},
		Step{When: "tool_result", Text: "Finished with the file."},
	)
	term := openTerminal(t, r.cwd, append(r.env(), hookEnv(r.bridge)...), r.bin, "--permission-mode", "default")
	term.AwaitScreen(60*time.Second, "? for shortcuts")
	pid := term.PID()
	s := r.session(30*time.Second, func(s snapshot) bool { return s.PID == pid })
	prompt(term, "make the marker")
	const dialog = "Do you want to proceed?"
	p := hookedPrompt{source: claudeSource, b: r.bridge, term: term, dialog: dialog, late: true,
		reason: func(w string) bool { return w == "Approve Bash: touch …/marker" }}
	s, lat := p.await(t)
	key := map[answer]string{approve: "1", interrupt: "Escape"}[a]
	if a == deny {
		// The last option is "No" (2.1.242: "No, and tell Claude what to
		// do differently"; 2.1.332: "No").
		// The dialog draws its options one after another: wait for it.
		no := regexp.MustCompile(`(\d)\. No\b`)
		screen, ok := term.waitScreen(10*time.Second, no.MatchString)
		r.checkf(ok, "no No option:\n%s", screen) // Fatalf when not ok
		key = no.FindStringSubmatch(screen)[1]
	}
	p.answer(t, s, a, key, marker, r.checkf)
	return lat, !t.Failed()
}

// codexHooked: Codex asks to run a command outside its sandbox; the
// scenario answers with a. Codex runs new hooks only once they are
// trusted: the scenario trusts them in the dialog Codex shows at start
// escalatedTouch is Codex's call that creates marker outside its
// workspace: it asks for approval.
func escalatedTouch(marker string) *ToolCall {
	return &ToolCall{Name: "exec_command", Input: map[string]any{
		"cmd": "touch " + shellQuote(marker), "sandbox_permissions": "require_escalated", "justification": "Create the marker outside the workspace"}}
}

// openHooked runs Codex (daemon or --no-daemon) in a terminal with the
// bridge's hook environment and trusts the installed hooks.
func (r *codexRig) openHooked(t *testing.T, daemon bool) *terminal {
	argv := []string{r.bin}
	if !daemon {
		argv = append(argv, "--no-daemon")
	}
	term := openTerminal(t, r.cwd, append(r.env(), hookEnv(r.bridge)...), argv...)
	trustHooks(term)
	return term
}

// ("Hooks need review"), as a user does once.
func codexHooked(t *testing.T, c agentCLI, daemon bool, a answer) (latency, bool) {
	r := newCodexRig(t, c, daemon)
	out := installHooks(t, r.home, "codex", "CODEX_HOME="+r.codex)
	r.checkf(strings.Contains(out, "hooks.json") && strings.Contains(out, "config.toml"), "hooks install: %s", out)
	marker := filepath.Join(r.home, "outside-marker")
	r.model.Script(
		Step{Tool: escalatedTouch(marker)},
		Step{When: "function_call_output", Text: "Finished with the file."},
	)
	term := r.openHooked(t, daemon)
	prompt(term, "make the marker")
	const dialog = "Would you like to run"
	p := hookedPrompt{source: codexSource, b: r.bridge, term: term, dialog: dialog,
		reason: func(w string) bool { return w == "Approve Bash: touch '…/outside-marker'" }}
	s, lat := p.await(t)
	// Codex's "No" (n) is "tell Codex what to do differently": like
	// Escape, it ends the turn.
	p.answer(t, s, a, map[answer]string{approve: "y", deny: "n", interrupt: "Escape"}[a], marker, r.checkf)
	return lat, !t.Failed()
}

// trustHooks answers Codex's "Hooks need review" dialog with "Trust all
// and continue" and waits for the input box. It acts on what the screen
// shows, one key at a time: a key pressed while the dialog is still
// drawing can be lost, and a screen being redrawn shows nothing.
func trustHooks(term *terminal) {
	term.t.Helper()
	term.AwaitScreen(60*time.Second, "Hooks need review", "Trust all and continue")
	deadline := time.Now().Add(60 * time.Second)
	for {
		x := term.Screen()
		switch {
		case strings.Contains(x, "mock-model") && !strings.Contains(x, "Hooks need review"):
			return
		case strings.Contains(x, "› 2. Trust all"):
			term.Keys("Enter")
		case strings.Contains(x, "Trust all and continue"):
			term.Keys("2")
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("Codex's hook review did not end; it shows:\n%s", x)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// waits lists the sessions' wait events with their ids and reasons, and
// the bridge's log, for failure messages.
func (b *bridge) waits(source string) string {
	var sb strings.Builder
	for _, x := range b.Sessions(source) {
		fmt.Fprintf(&sb, "%s %s\n", x.ID, x)
		for _, e := range b.Events(source, x.ID) {
			fmt.Fprintf(&sb, "  %s %s %s %s\n", e.Kind, e.WaitID, e.Reason, e.Outcome)
		}
	}
	return sb.String() + "bridge log:\n" + b.out.String()
}
