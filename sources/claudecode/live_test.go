package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/sse"
	"github.com/agentbridge/agentbridge/validate"
)

// streamView is a client of GET /v1/events (NDJSON) that applies the
// stream to its own copy of the sessions, as a dashboard would: resets and
// upserts carry the snapshots, lifecycle records say what happened (each
// is checked against the contract's event rules).
type streamView struct {
	mu      sync.Mutex
	changed chan struct{}
	state   client.State
	kinds   []agentbridge.EventKind
	diags   []agentbridge.Diagnostic
	errs    []string
	trail   map[string][]agentbridge.Status // per session, the statuses a client saw, repeats folded
	turns   map[string]int                  // per session, the turn.started records seen
}

func (v *streamView) read(r io.Reader) {
	rd := client.NewReader(r, client.NDJSON, 4<<20)
	for {
		ev, err := rd.Next()
		if errors.Is(err, client.ErrBadEvent) || errors.Is(err, client.ErrLineTooLong) {
			v.fail(err.Error())
			return
		}
		if err != nil {
			return
		}
		if os.Getenv("CCDEBUG") != "" {
			fmt.Println(ev.ID, ev.Name, string(ev.Data))
		}
		v.apply(ev)
	}
}

func (v *streamView) fail(s string) {
	v.mu.Lock()
	v.errs = append(v.errs, s)
	v.mu.Unlock()
}

func (v *streamView) apply(ev client.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.state.Apply(ev); err != nil {
		v.errs = append(v.errs, err.Error())
	}
	if v.trail == nil {
		v.trail = map[string][]agentbridge.Status{}
	}
	for _, e := range v.state.Sessions() {
		id, st := e.Snapshot.ID, sourcestest.ShownStatus(&e.Snapshot, e.Ended)
		if tr := v.trail[id]; len(tr) == 0 || tr[len(tr)-1] != st {
			v.trail[id] = append(tr, st)
		}
	}
	switch ev.Name {
	case agentbridge.RecordLifecycle:
		var d struct {
			SessionID string            `json:"sessionId"`
			Event     agentbridge.Event `json:"event"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		if is := validate.Event(d.Event); len(is) > 0 {
			v.errs = append(v.errs, fmt.Sprintf("stream event %s is invalid: %+v", d.Event.Kind, is))
		}
		v.kinds = append(v.kinds, d.Event.Kind)
		if d.Event.Kind == agentbridge.KindTurnStarted {
			if v.turns == nil {
				v.turns = map[string]int{}
			}
			v.turns[d.SessionID]++
		}
	case agentbridge.RecordDiagnostic:
		var d struct {
			Diagnostic agentbridge.Diagnostic `json:"diagnostic"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		v.diags = append(v.diags, d.Diagnostic)
	}
	select {
	case v.changed <- struct{}{}:
	default:
	}
}

// waitFor waits (up to 10 s) until the session's snapshot satisfies ok.
// The snapshot's status is what a user sees (sourcestest.ShownStatus).
func (v *streamView) waitFor(t *testing.T, step, id string, ok func(s agentbridge.Snapshot, found bool) bool) agentbridge.Snapshot {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		v.mu.Lock()
		snap, found := v.state.Session(SourceID, id)
		snap.Status = sourcestest.ShownStatus(&snap, v.state.Ended(SourceID, id))
		errs := append([]string(nil), v.errs...)
		v.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("%s: %v", step, errs)
		}
		if ok(snap, found) {
			return snap
		}
		select {
		case <-v.changed:
		case <-deadline:
			b, _ := json.Marshal(snap)
			t.Fatalf("%s: timed out; snapshot now (found=%v): %s", step, found, b)
		}
	}
}

// liveEnv is a temporary CLAUDE_CONFIG_DIR with the source, a hub and an
// HTTP stream client running on it.
type liveEnv struct {
	t    *testing.T
	dir  string
	view *streamView
	hub  *hub.Hub
}

func startLive(t *testing.T, prepare func(dir string)) *liveEnv {
	t.Helper()
	return startLiveWith(t, prepare, nil)
}

// scans counts the scans src's running tailer completed (0 before it
// runs).
func scans(src *Source) uint64 {
	if tl := src.Tailer(); tl != nil {
		return tl.Scans()
	}
	return 0
}

// startLiveWith is startLive that also hands out the source.
func startLiveWith(t *testing.T, prepare func(dir string), srcOut **Source) *liveEnv {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "projects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(dir)
	}
	h := hub.New(hub.Options{})
	o := Options{Home: dir}
	if os.Getenv("CCDEBUG") != "" {
		o.Logger = slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	src := New(o)
	if srcOut != nil {
		*srcOut = src
	}
	if err := h.Add(src); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Run(ctx) }()
	srv := httptest.NewServer(sse.New(h, sse.Options{}))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/?format=ndjson", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); scans(src) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the source did not finish its first scan")
		}
		time.Sleep(5 * time.Millisecond)
	}
	v := &streamView{changed: make(chan struct{}, 1)}
	readDone := make(chan struct{})
	go func() { defer close(readDone); v.read(resp.Body) }()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		srv.CloseClientConnections()
		srv.Close()
		<-done
		<-readDone
	})
	return &liveEnv{t: t, dir: dir, view: v, hub: h}
}

func (e *liveEnv) write(rel string, data string) {
	e.t.Helper()
	p := filepath.Join(e.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *liveEnv) append(rel string, records ...string) {
	e.t.Helper()
	p := filepath.Join(e.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	for _, r := range records {
		if _, err := f.WriteString(r + "\n"); err != nil {
			e.t.Fatal(err)
		}
	}
}

// registry writes sessions/<pid>.json whole, as Claude Code does.
func (e *liveEnv) registry(pid int, sessionID, status, waitingFor string, updated int64) {
	e.t.Helper()
	m := map[string]any{
		"pid": pid, "sessionId": sessionID, "cwd": "/work/proj", "startedAt": time.Now().Add(-time.Second).UnixMilli(),
		"procStart": "x", "version": "2.1.200", "kind": "interactive", "entrypoint": "cli",
		"updatedAt": updated, "statusUpdatedAt": updated,
	}
	if status != "" {
		m["status"] = status
	}
	if waitingFor != "" {
		m["waitingFor"] = waitingFor
	}
	b, _ := json.Marshal(m)
	e.write(filepath.Join("sessions", fmt.Sprintf("%d.json", pid)), string(b))
}

// helper starts a stand-in for a claude process; killing it is an exit.
func helper(t *testing.T) *exec.Cmd {
	t.Helper()
	// Named claude: a registry file binds only a Claude Code process.
	return proctest.Start(t, exec.Command(proctest.Named(t, "claude"), "600"))
}

// rec builds a transcript record of session sid (Claude Code 2.1 shape).
func rec(sid string, n int, typ string, fields string) string {
	ts := time.Date(2026, 5, 1, 12, 0, n, 0, time.UTC).Format(time.RFC3339Nano)
	base := fmt.Sprintf(`"uuid":"u-%03d","sessionId":%q,"cwd":"/work/proj","version":"2.1.200","timestamp":%q,"isSidechain":false,"userType":"external","type":%q`, n, sid, ts, typ)
	if fields == "" {
		return "{" + base + "}"
	}
	return "{" + base + "," + fields + "}"
}

func prompt(sid string, n int, promptID, text string) string {
	return rec(sid, n, "user", fmt.Sprintf(`"promptId":%q,"message":{"role":"user","content":%q}`, promptID, text))
}

func toolUse(sid string, n int, id, name, input string) string {
	return rec(sid, n, "assistant", fmt.Sprintf(`"message":{"model":"claude-opus-4-7","id":"msg_%d","role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}],"stop_reason":"tool_use"}`, n, id, name, input))
}

func toolResult(sid string, n int, id, content string, isError bool, result string) string {
	f := fmt.Sprintf(`"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%q,"is_error":%v}]}`, id, content, isError)
	if result != "" {
		f += `,"toolUseResult":` + result
	}
	return rec(sid, n, "user", f)
}

func reply(sid string, n int, text, stop string) string {
	return rec(sid, n, "assistant", fmt.Sprintf(`"message":{"model":"claude-opus-4-7","id":"msg_%d","role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":%q}`, n, text, stop))
}

func status(want agentbridge.Status) func(agentbridge.Snapshot, bool) bool {
	return func(s agentbridge.Snapshot, found bool) bool { return found && s.Status == want }
}

// TestLiveSession replays a realistic Claude Code 2.1 session record by
// record into a temporary CLAUDE_CONFIG_DIR, with the registry changing
// beside it, and checks after each step what a client of the real HTTP
// stream sees.
func TestLiveSession(t *testing.T) {
	e := startLive(t, nil)
	proc := helper(t)
	pid := proc.Process.Pid
	const sid = "5d7e0c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6"
	tr := filepath.Join("projects", "-work-proj", sid+".jsonl")
	v := e.view

	e.registry(pid, sid, "idle", "", 1000)
	s := v.waitFor(t, "registry entry of a fresh claude", sid, status(agentbridge.StatusIdle))
	if s.PID != pid || s.Cwd != "/work/proj" {
		t.Fatalf("fresh session: pid %d cwd %q, want %d /work/proj", s.PID, s.Cwd, pid)
	}

	e.append(tr, `{"type":"permission-mode","permissionMode":"default","sessionId":"`+sid+`"}`,
		prompt(sid, 1, "p-1", "list the files in /work/proj/src please"))
	e.registry(pid, sid, "busy", "", 1100)
	s = v.waitFor(t, "prompt", sid, status(agentbridge.StatusRunning))
	if s.Title != "list the files in …/src please" {
		t.Errorf("title %q: want the prompt with its path shortened", s.Title)
	}

	e.append(tr, toolUse(sid, 2, "toolu_01Bash", "Bash", `{"command":"ls"}`))
	e.registry(pid, sid, "waiting", "approve Bash", 1200)
	s = v.waitFor(t, "approval prompt", sid, status(agentbridge.StatusWaiting))
	if s.WaitingFor != "Approve Bash: ls" {
		t.Errorf("waitingFor %q, want the pending tool (Approve Bash: ls)", s.WaitingFor)
	}

	e.registry(pid, sid, "busy", "", 1300)
	v.waitFor(t, "approved", sid, status(agentbridge.StatusRunning))
	e.append(tr, toolResult(sid, 3, "toolu_01Bash", "a\nb", false, `{"stdout":"a\nb"}`))

	e.append(tr, toolUse(sid, 4, "toolu_01Agent", "Agent", `{"description":"Survey the code","subagent_type":"Explore","prompt":"look"}`))
	e.write(filepath.Join("projects", "-work-proj", sid, "subagents", "agent-a1b2.meta.json"), `{"agentType":"Explore","description":"Survey the code","toolUseId":"toolu_01Agent"}`)
	e.append(filepath.Join("projects", "-work-proj", sid, "subagents", "agent-a1b2.jsonl"),
		rec(sid, 5, "user", `"isSidechain":true,"agentId":"a1b2","message":{"role":"user","content":"look"}`))
	s = v.waitFor(t, "subagent start", sid, func(s agentbridge.Snapshot, found bool) bool {
		return found && len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentRunning
	})
	if s.Subagents[0].ID != "toolu_01Agent" || s.Subagents[0].Type != "Explore" || s.Subagents[0].Title != "Survey the code" {
		t.Errorf("subagent %+v", s.Subagents[0])
	}
	e.append(tr, toolResult(sid, 6, "toolu_01Agent", "done", false, `{"status":"completed","agentId":"a1b2"}`))
	v.waitFor(t, "subagent finish", sid, func(s agentbridge.Snapshot, found bool) bool {
		return found && len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentCompleted
	})

	e.append(tr, reply(sid, 7, "Two files.", "end_turn"),
		rec(sid, 8, "system", `"subtype":"turn_duration","durationMs":8000`))
	e.registry(pid, sid, "idle", "", 1400)
	s = v.waitFor(t, "turn end", sid, status(sourcestest.StatusDone))
	if s.LastTurn != agentbridge.LastTurnCompleted {
		t.Errorf("lastTurn %q after a turn end", s.LastTurn)
	}

	e.append(tr, prompt(sid, 9, "p-2", "now write an essay"))
	v.waitFor(t, "second prompt", sid, status(agentbridge.StatusRunning))
	e.append(tr, rec(sid, 10, "user", `"promptId":"p-2","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}`))
	s = v.waitFor(t, "interrupt", sid, status(sourcestest.StatusDone))
	if s.LastTurn != agentbridge.LastTurnInterrupted {
		t.Errorf("lastTurn %q after an interrupt, want cancelled", s.LastTurn)
	}

	e.append(tr, prompt(sid, 11, "p-3", "try again"),
		rec(sid, 12, "system", `"subtype":"api_error","retryInMs":500,"retryAttempt":1,"maxRetries":10,"error":{"status":529}`))
	v.waitFor(t, "retry notice is not an end", sid, status(agentbridge.StatusRunning))
	e.append(tr, rec(sid, 13, "assistant", `"isApiErrorMessage":true,"error":"rate_limit","apiErrorStatus":429,"message":{"model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: rate limited"}],"stop_reason":"stop_sequence"}`))
	s = v.waitFor(t, "API error", sid, status(sourcestest.StatusDone))
	if s.LastTurn != agentbridge.LastTurnFailed {
		t.Errorf("lastTurn %q after an API error, want failed", s.LastTurn)
	}

	// A half-written registry file changes nothing; the next write counts.
	e.write(filepath.Join("sessions", fmt.Sprintf("%d.json", pid)), `{"pid":`+fmt.Sprint(pid)+`,"sessionId":"`+sid+`","status":"wai`)
	e.append(tr, prompt(sid, 14, "p-4", "delete the build dir"), toolUse(sid, 15, "toolu_01Rm", "Bash", `{"command":"rm -r build"}`))
	v.waitFor(t, "prompt after a torn registry write", sid, status(agentbridge.StatusRunning))
	e.registry(pid, sid, "waiting", "approve Bash", 1500)
	v.waitFor(t, "second approval", sid, status(agentbridge.StatusWaiting))

	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s = v.waitFor(t, "process killed", sid, status(sourcestest.StatusExited))
	if s.WaitingFor != "" {
		t.Errorf("waitingFor %q after exit", s.WaitingFor)
	}
}
