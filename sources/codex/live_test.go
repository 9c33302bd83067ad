package codex

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// stream follows GET /v1/events?format=ndjson and applies it, as a client
// would, to the codex source's sessions.
type stream struct {
	mu      sync.Mutex
	state   client.State
	resets  int
	gone    map[string]int // times a session left the client's view
	changed chan struct{}
	err     error
	hub     *hub.Hub // the bridge's
}

// startStream runs src behind a real hub, stream and API and follows
// the stream until the test ends.
func startStream(t *testing.T, src hub.Source) *stream {
	t.Helper()
	b := bridgetest.Start(t, bridgetest.Options{Sources: []hub.Source{src}})
	rd, err := b.Client().Open(t.Context(), client.StreamOptions{Format: client.NDJSON, MaxLine: 1 << 20})
	if err != nil {
		t.Fatalf("GET events: %v", err)
	}
	s := &stream{gone: map[string]int{}, changed: make(chan struct{}, 1), hub: b.Hub}
	done := make(chan struct{})
	t.Cleanup(func() { rd.Close(); <-done })
	go func() {
		defer close(done)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			s.apply(ev)
		}
	}()
	return s
}

func (s *stream) apply(ev client.Event) {
	s.mu.Lock()
	defer func() {
		s.mu.Unlock()
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}()
	var d struct {
		Source string `json:"source"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		s.err = fmt.Errorf("stream event %d: %w", ev.ID, err)
		return
	}
	if d.Source != ID {
		return
	}
	before := s.state.Sessions()
	if err := s.state.Apply(ev); err != nil {
		s.err = err
		return
	}
	if ev.Name == agentbridge.RecordReset {
		s.resets++
	}
	for _, e := range before {
		if _, ok := s.state.Session(ID, e.Snapshot.ID); !ok {
			s.gone[e.Snapshot.ID]++
		}
	}
}

// waitFor waits (up to 10 s) until cond holds for the sessions the stream
// has delivered, each status as a user sees it (sourcestest.ShownStatus);
// it fails with what and the last state otherwise.
func (s *stream) waitFor(t *testing.T, what string, cond func(map[string]agentbridge.Snapshot) bool) map[string]agentbridge.Snapshot {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		snaps := map[string]agentbridge.Snapshot{}
		for _, e := range s.state.Sessions() {
			e.Snapshot.Status = sourcestest.ShownStatus(&e.Snapshot, e.Ended)
			snaps[e.Snapshot.ID] = e.Snapshot
		}
		err, resets := s.err, s.resets
		s.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if resets > 0 && cond(snaps) {
			return snaps
		}
		select {
		case <-s.changed:
		case <-deadline:
			t.Fatalf("%s: not reached within 10s; sessions: %+v", what, snaps)
		}
	}
}

// holdOpen starts a helper process named codex writing path (an extra fd
// open for appending), as Codex holds its rollout; it is killed at the end
// of the test at the latest.
func holdOpen(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	return proctest.Hold(t, "codex", path, proctest.Write)
}

type rolloutFile struct {
	t *testing.T
	f *os.File
}

func createRollout(t *testing.T, path string) *rolloutFile {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &rolloutFile{t, f}
}

// add appends records, each {"timestamp", "type", "payload"} with the
// current time.
func (r *rolloutFile) add(records ...string) {
	r.t.Helper()
	r.addAt(time.Now(), records...)
}

// addAt appends records written at a given time.
func (r *rolloutFile) addAt(at time.Time, records ...string) {
	r.t.Helper()
	ts := at.UTC().Format("2006-01-02T15:04:05.000Z")
	for _, rec := range records {
		if _, err := fmt.Fprintf(r.f, `{"timestamp":%q,%s}`+"\n", ts, rec); err != nil {
			r.t.Fatal(err)
		}
	}
}

// TestLive runs the source on a temporary CODEX_HOME behind the real hub
// and event stream, and checks what a client of GET /v1/events sees after
// each step of a Codex session's life.
func TestLive(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		testenv.Missing(t, "needs sleep(1)")
	}
	home := t.TempDir()
	cwd := t.TempDir()
	st := startStream(t, New(Options{Home: home, Linger: -1, Logger: slog.New(slog.DiscardHandler)}))

	const (
		parent = "019f6249-055d-76d3-b381-cd9d3eb99189"
		child  = "019f624a-cc95-7c50-b9fa-1db381270b73"
		other  = "019f624b-cc95-7c50-b9fa-1db381270b74"
	)
	st.waitFor(t, "initial reset", func(m map[string]agentbridge.Snapshot) bool { return len(m) == 0 })

	// 1. A date folder appears with a rollout that a process holds open.
	day1 := filepath.Join(home, "sessions", "2026", "11", "30")
	ppath := filepath.Join(day1, "rollout-2026-11-30T08-00-00-"+parent+".jsonl")
	p := createRollout(t, ppath)
	helper := holdOpen(t, ppath)
	p.add(`"type":"session_meta","payload":{"id":"` + parent + `","cwd":` + mustJSON(cwd) + `,"cli_version":"0.130.0","source":"cli","base_instructions":{"text":"long instructions"}}`)
	st.waitFor(t, "session known, idle, bound to its process", func(m map[string]agentbridge.Snapshot) bool {
		s, ok := m[parent]
		return ok && s.Status == agentbridge.StatusIdle && s.PID == helper.Process.Pid && s.Cwd == cwd
	})

	// 2. A turn starts.
	p.add(`"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}`,
		`"type":"turn_context","payload":{"turn_id":"t1","cwd":`+mustJSON(cwd)+`,"approval_policy":"never","model":"gpt-5.5"}`,
		`"type":"event_msg","payload":{"type":"user_message","message":"Add a test for the parser in `+cwd+`/parse.go"}`,
		`"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"call_1"}`)
	st.waitFor(t, "running, titled, with its model", func(m map[string]agentbridge.Snapshot) bool {
		s := m[parent]
		return s.Status == agentbridge.StatusRunning && s.Title == "Add a test for the parser in …/parse.go" && s.Model == "gpt-5.5"
	})

	// 3. The turn completes; a second one is interrupted.
	p.add(`"type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"Process exited with code 0"}`,
		`"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"done"}`)
	st.waitFor(t, "done, completed", func(m map[string]agentbridge.Snapshot) bool {
		s := m[parent]
		return s.Status == sourcestest.StatusDone && s.LastTurn == agentbridge.LastTurnCompleted
	})
	p.add(`"type":"event_msg","payload":{"type":"task_started","turn_id":"t2"}`)
	st.waitFor(t, "running again", func(m map[string]agentbridge.Snapshot) bool { return m[parent].Status == agentbridge.StatusRunning })
	p.add(`"type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t2","reason":"interrupted"}`)
	st.waitFor(t, "done, cancelled", func(m map[string]agentbridge.Snapshot) bool {
		s := m[parent]
		return s.Status == sourcestest.StatusDone && s.LastTurn == agentbridge.LastTurnInterrupted
	})

	// 4. A subagent thread, in a new date folder, is folded into its parent.
	day2 := filepath.Join(home, "sessions", "2026", "12", "01")
	c := createRollout(t, filepath.Join(day2, "rollout-2026-12-01T00-00-01-"+child+".jsonl"))
	c.add(`"type":"session_meta","payload":{"id":"` + child + `","source":{"subagent":{"thread_spawn":{"parent_thread_id":"` + parent + `","depth":1,"agent_nickname":"Euclid","agent_role":"explorer"}}}}`)
	c.add(`"type":"event_msg","payload":{"type":"task_started","turn_id":"c1"}`)
	st.waitFor(t, "subagent running under its parent", func(m map[string]agentbridge.Snapshot) bool {
		s := m[parent]
		_, asRoot := m[child]
		return !asRoot && len(s.Subagents) == 1 && s.Subagents[0] == agentbridge.Subagent{ID: child, Type: "explorer", Title: "Euclid", Status: agentbridge.SubagentRunning}
	})
	c.add(`"type":"event_msg","payload":{"type":"task_complete","turn_id":"c1","last_agent_message":"ok"}`)
	st.waitFor(t, "subagent completed", func(m map[string]agentbridge.Snapshot) bool {
		s := m[parent]
		_, asRoot := m[child]
		return !asRoot && len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentCompleted
	})
	before := st.waitFor(t, "state before compression", func(map[string]agentbridge.Snapshot) bool { return true })[parent]

	// 5. The rollout is compressed in place: the same session, unchanged.
	// Another rollout appearing later (and sorting after it) is the
	// barrier that shows the rename was handled.
	if err := os.Rename(ppath, ppath+".zst"); err != nil {
		t.Fatal(err)
	}
	o := createRollout(t, filepath.Join(day2, "rollout-2026-12-01T00-00-02-"+other+".jsonl"))
	o.add(`"type":"session_meta","payload":{"id":"` + other + `","source":"exec"}`)
	after := st.waitFor(t, "barrier session known", func(m map[string]agentbridge.Snapshot) bool { _, ok := m[other]; return ok })
	if got, ok := after[parent]; !ok {
		t.Fatal("the session was removed when its rollout was compressed")
	} else if !equalSnap(got, before) {
		t.Fatalf("after compression:\n%+v\nwant the same as before:\n%+v", got, before)
	}

	// 6. The thread is named in session_index.jsonl.
	if err := os.WriteFile(filepath.Join(home, "session_index.jsonl"),
		[]byte(`{"id":"`+parent+`","thread_name":"Parser tests","updated_at":"2026-11-30T08:10:00Z"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st.waitFor(t, "titled from the session index", func(m map[string]agentbridge.Snapshot) bool { return m[parent].Title == "Parser tests" })

	// 7. The process dies: exited.
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	final := st.waitFor(t, "exited", func(m map[string]agentbridge.Snapshot) bool { return m[parent].Status == sourcestest.StatusExited })
	if s := final[parent]; s.LastTurn != agentbridge.LastTurnInterrupted || len(s.Subagents) != 1 || s.Subagents[0].Status != agentbridge.SubagentCompleted {
		t.Errorf("exited session %+v lost its last turn or subagents", s)
	}
	// What the stream built is what the hub holds.
	_, entries := st.hub.Sessions(agentbridge.Filter{Sources: []string{ID}})
	for _, e := range entries {
		e.Snapshot.Status = sourcestest.ShownStatus(&e.Snapshot, e.Ended) // as waitFor shows it
		if !equalSnap(e.Snapshot, final[e.Snapshot.ID]) {
			t.Errorf("hub has %+v, stream built %+v", e.Snapshot, final[e.Snapshot.ID])
		}
	}
	if len(entries) != len(final) {
		t.Errorf("hub has %d sessions, stream built %d", len(entries), len(final))
	}
}

func equalSnap(a, b agentbridge.Snapshot) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestResumeAfterExit: codex resume appends to the rollout of a thread
// whose process exited: the same session (not removed, so its linger
// cannot remove it while it is live) is bound to the new process holding
// the rollout, whose exit is observed again. The client never loses the
// session on the way, and no reset (a rebuild) follows the start-up ones:
// the stream's initial reset and, when the client connected before the
// source's first scan ended, the source's own start-up reset — which of
// the two orders happens is timing, so those are not counted.
func TestResumeAfterExit(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		testenv.Missing(t, "needs sleep(1)")
	}
	home := t.TempDir()
	st := startStream(t, New(Options{Home: home, Logger: slog.New(slog.DiscardHandler)}))

	const id = "019f6300-0000-7000-8000-000000000001"
	path := filepath.Join(home, "sessions", "2026", "11", "30", "rollout-2026-11-30T09-00-00-"+id+".jsonl")
	r := createRollout(t, path)
	first := holdOpen(t, path)
	r.add(`"type":"session_meta","payload":{"id":"`+id+`","cwd":"/srv/x","source":"cli"}`,
		`"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}`,
		`"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"ok"}`)
	st.waitFor(t, "bound to the first process", func(m map[string]agentbridge.Snapshot) bool {
		s, ok := m[id]
		return ok && s.Status == sourcestest.StatusDone && s.PID == first.Process.Pid
	})
	// The session came from the source after its start-up reset: every
	// start-up reset has been delivered by now.
	st.mu.Lock()
	startup := st.resets
	st.mu.Unlock()
	_ = first.Process.Kill()
	_ = first.Wait()
	st.waitFor(t, "exited", func(m map[string]agentbridge.Snapshot) bool { return m[id].Status == sourcestest.StatusExited })

	second := holdOpen(t, path)
	r.add(`"type":"event_msg","payload":{"type":"task_started","turn_id":"t2"}`)
	st.waitFor(t, "taken up by the second process", func(m map[string]agentbridge.Snapshot) bool {
		s, ok := m[id]
		return ok && s.Status == agentbridge.StatusRunning && s.PID == second.Process.Pid
	})
	_ = second.Process.Kill()
	_ = second.Wait()
	st.waitFor(t, "the second process's exit", func(m map[string]agentbridge.Snapshot) bool {
		s, ok := m[id]
		return ok && s.Status == sourcestest.StatusExited && s.LastTurn == agentbridge.LastTurnCompleted
	})
	st.mu.Lock()
	resets, gone := st.resets-startup, st.gone[id]
	st.mu.Unlock()
	if resets != 0 {
		t.Errorf("%d resets after start-up; want none (exit and resume need no rebuild)", resets)
	}
	if gone != 0 {
		t.Errorf("the session left the client's view %d times; want the same session throughout", gone)
	}
}
