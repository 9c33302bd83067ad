package live

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

// snapshot is the part of a session snapshot the scenarios check.
type snapshot struct {
	ID              string     `json:"id"`
	Harness         string     `json:"harness"`
	PID             int        `json:"pid"`
	Cwd             string     `json:"cwd"`
	Title           string     `json:"title"`
	Model           string     `json:"model"`
	Status          string     `json:"status"`
	WaitingFor      string     `json:"waitingFor"`
	LastTurn        string     `json:"lastTurn"`
	LastTurnEndedAt int64      `json:"lastTurnEndedAt"`
	Subagents       []subagent `json:"subagents"`
}

type subagent struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

func (s snapshot) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// lifecycle is one lifecycle event of the stream.
type lifecycle struct {
	Kind       string `json:"kind"`
	TurnID     string `json:"turnId"`
	PromptText string `json:"promptText"`
	Reason     string `json:"reason"`
	Outcome    string `json:"outcome"`
	Name       string `json:"name"`
	SubagentID string `json:"subagentId"`
	WaitID     string `json:"waitId"`
	OccurredAt int64  `json:"occurredAt"` // epoch ms
}

// bridge is a running agentbridge process watching one private home, and
// a follower of its event stream that keeps the sessions it reports.
type bridge struct {
	t     *testing.T
	base  string
	token string
	cmd   *exec.Cmd
	out   *lockedBuffer
	done  chan struct{}

	mu      sync.Mutex
	state   client.State           // what the stream says, folded
	errs    []string               // what the stream did wrong
	events  map[string][]lifecycle // "source/id" → lifecycle events
	removed map[string]bool
	refused map[string]bool // "source/id": the host profile refused it while it ran (told once)
	changed chan struct{}
	cancel  context.CancelFunc
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startBridge runs `agentbridge serve` on a free loopback port, watching
// the agent homes under home, and follows its stream.
// env adds to the bridge's environment (AGENTBRIDGE_HOOKS_ANSWER=true).
func startBridge(t *testing.T, home string, env ...string) *bridge {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &bridge{
		t: t, base: "http://" + addr, token: "live-token-0123456789abcdef", out: &lockedBuffer{},
		done:   make(chan struct{}),
		events: map[string][]lifecycle{}, removed: map[string]bool{}, refused: map[string]bool{}, changed: make(chan struct{}),
	}
	b.cmd = exec.Command(agentbridgeBin(t), "serve", "--listen", addr, "--config", cfg)
	b.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"CODEX_HOME=" + filepath.Join(home, ".codex"),
		"AGENTBRIDGE_TOKEN=" + b.token,
	}
	b.cmd.Env = append(b.cmd.Env, env...)
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start bridge: %v", err)
	}
	go func() { b.cmd.Wait(); close(b.done) }()
	t.Cleanup(b.stop)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if res, err := http.Get(b.base + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-b.done:
			t.Fatalf("bridge exited early:\n%s", b.out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("bridge did not answer /healthz:\n%s", b.out)
		}
	}
	b.follow()
	return b
}

// promptAnswered types text into term's prompt and waits for answer on its
// screen.
func promptAnswered(term *terminal, text, answer string) {
	term.t.Helper()
	prompt(term, text)
	term.AwaitScreen(60*time.Second, answer)
}

// quitOne waits for the sessions keep and gone of source to be done,
// quits gone's TUI with quitTUI and waits for its session to end: what a
// "bridge restart" scenario does before the restart.
func (b *bridge) quitOne(source, keep, gone string, quitTUI func()) {
	b.t.Helper()
	b.AwaitStatus(source, keep, "done", 20*time.Second)
	b.AwaitStatus(source, gone, "done", 20*time.Second)
	quitTUI()
	b.AwaitStatus(source, gone, "exited", 20*time.Second)
}

// restarted stops b and starts a bridge again on home, as the "bridge
// restart" scenarios do, and returns it and what it shows wrong ("":
// nothing): the running TUI's session runningID must come back done with
// the same pid, and the quit TUI's session quitID ended at once, never
// alive after the restart.
func (b *bridge) restarted(t *testing.T, home, source, runningID string, pid int, quitID string) (*bridge, string) {
	t.Helper()
	b.stop()
	nb := startBridge(t, home)
	x := nb.AwaitOne("the running session after the restart", source, 20*time.Second, func(s snapshot) bool { return s.ID == runningID })
	y, ok := nb.Session(source, quitID)
	h := nb.History(source, quitID)
	switch {
	case x.PID != pid || x.Status != "done":
		return nb, fmt.Sprintf("the running TUI's session is not done with the same pid %d: %s", pid, x)
	case !ok || y.Status != "exited":
		return nb, fmt.Sprintf("the quit TUI's session did not end at once: %s", y)
	case contains(h, "done"):
		return nb, fmt.Sprintf("the quit TUI's session showed alive after the restart: %v", h)
	}
	return nb, ""
}

func (b *bridge) stop() {
	if b.cancel != nil {
		b.cancel()
	}
	b.mu.Lock()
	errs := b.errs
	b.mu.Unlock()
	if len(errs) > 0 {
		b.t.Errorf("the bridge's event stream: %v", errs)
	}
	select {
	case <-b.done:
		return
	default:
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
	}
}

// follow follows the event stream with the project's Go client (JSON
// lines; it resumes after a drop without losing or repeating an event)
// and folds it into a client.State, recording besides the statuses each
// session went through and its lifecycle events. A duplicate event or a
// stream that breaks its grammar fails the test.
func (b *bridge) follow() {
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	c := client.New(strings.TrimPrefix(b.base, "http://"), b.token)
	connected := make(chan struct{})
	var once sync.Once
	go func() {
		err := c.Follow(ctx, client.FollowOptions{
			StreamOptions: client.StreamOptions{Format: client.NDJSON},
			OnConnect:     func(bool) { once.Do(func() { close(connected) }) },
			OnDuplicate:   func(ev client.Event) { b.fail(fmt.Sprintf("event %d delivered twice", ev.ID)) },
		}, b.apply)
		if ctx.Err() == nil {
			b.fail(fmt.Sprintf("the stream ended: %v", err))
			once.Do(func() { close(connected) })
		}
	}()
	select {
	case <-connected:
	case <-time.After(15 * time.Second):
		b.t.Fatal("the event stream did not open")
	}
}

func (b *bridge) fail(msg string) {
	b.mu.Lock()
	b.errs = append(b.errs, msg)
	b.mu.Unlock()
}

func (b *bridge) apply(ev client.Event) error {
	var d struct {
		Source    string    `json:"source"`
		SessionID string    `json:"sessionId"`
		Event     lifecycle `json:"event"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.state.Apply(ev); err != nil {
		b.errs = append(b.errs, err.Error())
		return nil
	}
	switch ev.Name {
	case agentbridge.RecordReset, agentbridge.RecordUpsert:
		for _, e := range b.state.Sessions() {
			if e.Source == d.Source {
				delete(b.removed, e.Source+"/"+e.Snapshot.ID)
			}
		}
	case agentbridge.RecordRemove:
		b.removed[d.Source+"/"+d.SessionID] = true
	case agentbridge.RecordLifecycle:
		k := d.Source + "/" + d.SessionID
		b.events[k] = append(b.events[k], d.Event)
	}
	close(b.changed)
	b.changed = make(chan struct{})
	return nil
}

// convert turns the bridge's entry into the suite's flat form; its
// status is what a user sees (sourcestest.ShownStatus): "done" for an idle
// session whose turn ended, "exited" for one that has ended.
func convert(e agentbridge.Entry) snapshot {
	var out snapshot
	b, _ := json.Marshal(e.Snapshot)
	_ = json.Unmarshal(b, &out)
	out.Status = string(sourcestest.ShownStatus(&e.Snapshot, e.Ended))
	return out
}

// hostCheck records, once per session, a session that runs (running,
// waiting or blocked, not ended) whose snapshot the Terminay host would
// refuse: every real CLI's sessions must be host-ready (a live process, a
// cwd) and pass the host's rules while they run. b.mu must be held.
func (b *bridge) hostCheck(e agentbridge.Entry) {
	s := &e.Snapshot
	if e.Ended != nil || s.Status == agentbridge.StatusIdle {
		return
	}
	k := e.Source + "/" + s.ID
	if b.refused[k] {
		return
	}
	if is := validate.SnapshotAs(*s, nil, validate.Host); len(is) > 0 {
		b.refused[k] = true
		b.errs = append(b.errs, fmt.Sprintf("the host would refuse %s while it is %s: %v", k, s.Status, is))
	}
}

// Sessions returns the sessions of one source, each checked by the host's
// rules (hostCheck).
func (b *bridge) Sessions(source string) []snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []snapshot
	for _, e := range b.state.Sessions() {
		if e.Source == source {
			b.hostCheck(e)
			out = append(out, convert(e))
		}
	}
	return out
}

// Session returns one session (ok false when not listed), checked by the
// host's rules (hostCheck).
func (b *bridge) Session(source, id string) (snapshot, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.state.EntryOn("", source, id)
	if ok {
		b.hostCheck(e)
	}
	return convert(e), ok
}

// History returns the statuses a session went through, repeats folded.
//
// It is computed from the session's lifecycle events, as the fold applies
// them one by one: the bridge may publish a burst of events with one
// snapshot (upserts carry the state, not every step to it), so the
// snapshots alone need not show each status.
func (b *bridge) History(source, id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var trail []string
	status, waits := "", 0
	for _, e := range b.events[source+"/"+id] {
		switch e.Kind {
		case "session.started":
			if status == "" || status == "exited" {
				status = "idle"
			}
		case "turn.started", "tool.started":
			if waits == 0 {
				status = "running"
			}
		case "wait.started":
			waits++
			status = "waiting"
		case "wait.finished":
			if waits--; waits <= 0 {
				waits, status = 0, "running"
			}
		case "agent.done":
			waits, status = 0, "done"
		case "agent.exited":
			waits, status = 0, "exited"
		}
		if status != "" && (len(trail) == 0 || trail[len(trail)-1] != status) {
			trail = append(trail, status)
		}
	}
	return trail
}

// Events returns the lifecycle events of a session.
func (b *bridge) Events(source, id string) []lifecycle {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]lifecycle(nil), b.events[source+"/"+id]...)
}

// Removed reports whether the session was removed.
func (b *bridge) Removed(source, id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.removed[source+"/"+id]
}

// Await waits until cond holds for the bridge's state; it fails the test
// with what the bridge reports otherwise.
func (b *bridge) Await(what string, timeout time.Duration, cond func() bool) {
	b.t.Helper()
	if err := b.await(timeout, cond); err != nil {
		b.t.Fatalf("bridge: %s: %v\nsessions: %s", what, err, b.dump())
	}
}

func (b *bridge) await(timeout time.Duration, cond func() bool) error {
	deadline := time.After(slow(timeout))
	for {
		b.mu.Lock()
		ch := b.changed
		b.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-deadline:
			return fmt.Errorf("not within %v", timeout)
		case <-b.done:
			return fmt.Errorf("the bridge exited:\n%s", b.out)
		}
	}
}

// AwaitOne waits for exactly one session of source matching pred and
// returns it.
func (b *bridge) AwaitOne(what, source string, timeout time.Duration, pred func(snapshot) bool) snapshot {
	b.t.Helper()
	var got snapshot
	b.Await(what, timeout, func() bool {
		n := 0
		for _, s := range b.Sessions(source) {
			if pred(s) {
				got, n = s, n+1
			}
		}
		return n == 1
	})
	return got
}

// AwaitStatus waits until the session has the status and returns it.
func (b *bridge) AwaitStatus(source, id, status string, timeout time.Duration) snapshot {
	b.t.Helper()
	var got snapshot
	b.Await(fmt.Sprintf("session %s to be %s", id, status), timeout, func() bool {
		s, ok := b.Session(source, id)
		got = s
		return ok && s.Status == status
	})
	return got
}

// againCompletes sends "again" with send (the CLI's way of typing a
// prompt), waits for the CLI to show the script's "Second answer." and for
// the session's next turn to complete, and returns the session: after an
// interrupt, the next prompt is a turn of its own.
func (b *bridge) againCompletes(term *terminal, send func(*terminal, string), source, id string) snapshot {
	b.t.Helper()
	send(term, "again")
	term.AwaitScreen(60*time.Second, "Second answer.")
	var s snapshot
	b.Await("the next turn to complete", 20*time.Second, func() bool {
		s, _ = b.Session(source, id)
		return s.Status == "done" && s.LastTurn == "completed"
	})
	return s
}

func (b *bridge) dump() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var sb strings.Builder
	for _, e := range b.state.Sessions() {
		k := e.Source + "/" + e.Snapshot.ID
		fmt.Fprintf(&sb, "\n  %s %s", k, convert(e))
		var kinds []string
		for _, ev := range b.events[k] {
			kinds = append(kinds, strings.TrimSuffix(ev.Kind+":"+ev.Outcome+ev.TurnID, ":"))
		}
		fmt.Fprintf(&sb, "\n    events: %s", strings.Join(kinds, " "))
	}
	for k := range b.removed {
		fmt.Fprintf(&sb, "\n  %s removed", k)
	}
	for _, e := range b.errs {
		fmt.Fprintf(&sb, "\n  stream: %s", e)
	}
	return sb.String()
}

// agentbridgeBin builds ./cmd/agentbridge once per test binary.
func agentbridgeBin(t *testing.T) string { return bridgetest.Binary(t, repoRoot, workDir) }

// SessionsOf asks GET /v1/sessions with query (e.g. "ancestorPid=123")
// and returns the ids of the source's sessions it lists.
func (b *bridge) SessionsOf(source, query string) []string {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.base+"/v1/sessions?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("GET /v1/sessions: %v", err)
	}
	defer res.Body.Close()
	var body struct {
		Sessions []struct {
			Source   string   `json:"source"`
			Snapshot snapshot `json:"snapshot"`
		} `json:"sessions"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
		b.t.Fatalf("GET /v1/sessions?%s: %s %v", query, res.Status, err)
	}
	var ids []string
	for _, e := range body.Sessions {
		if e.Source == source {
			ids = append(ids, e.Snapshot.ID)
		}
	}
	return ids
}
