package sources_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/claudecode"
	"github.com/agentbridge/agentbridge/sources/codex"
	"github.com/agentbridge/agentbridge/sources/example"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/pi"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// idleSleeper starts a stand-in agent process.
func idleSleeper(t *testing.T) int {
	t.Helper()
	return proctest.Start(t, exec.Command("sleep", "600")).Process.Pid
}

func mkfile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestIdleBridgeDoesNothing runs four file-based sources (example,
// Claude Code, Codex, Pi) on homes with sessions, one bound to a live
// process in each (by pid record, by the registry, by the process holding
// the rollout open, by the runtime's binder: cwd and start time) and one
// not bound, lets them settle, and then counts over
// a quiet interval: no tailer wake-up, no journal read and no timer firing.
// It runs alone (not in parallel): the counters are process-wide.
func TestIdleBridgeDoesNothing(t *testing.T) {
	now := time.Now().UTC()
	ts := now.Format(time.RFC3339Nano)

	// example: s1 names its live process; s2 has a turn and no process.
	exHome := t.TempDir()
	exPID := idleSleeper(t)
	mkfile(t, filepath.Join(example.SessionsDir(exHome), "s1.jsonl"),
		fmt.Sprintf(`{"type":"session","ts":%q,"pid":%d}`+"\n", ts, exPID))
	mkfile(t, filepath.Join(example.SessionsDir(exHome), "s2.jsonl"),
		fmt.Sprintf(`{"type":"session","ts":%q}`+"\n"+`{"type":"prompt","ts":%q,"turnId":"t1","text":"hi"}`+"\n", ts, ts))

	// Claude Code: a transcript whose process is in the registry.
	ccDir := t.TempDir()
	const ccID = "5a5a5a5a-0000-4000-8000-000000000001"
	mkfile(t, filepath.Join(ccDir, "projects", "-work-proj", ccID+".jsonl"),
		fmt.Sprintf(`{"uuid":"u-1","sessionId":%q,"cwd":"/work/proj","version":"2.1.200","timestamp":%q,"isSidechain":false,"userType":"external","type":"user","promptId":"p1","message":{"role":"user","content":"hello"}}`+"\n", ccID, ts))
	ccPID := proctest.Start(t, exec.Command(proctest.Named(t, "claude"), "600")).Process.Pid
	mkfile(t, filepath.Join(ccDir, "sessions", fmt.Sprintf("%d.json", ccPID)),
		fmt.Sprintf(`{"pid":%d,"sessionId":%q,"cwd":"/work/proj","startedAt":%d,"status":"busy","updatedAt":%d}`, ccPID, ccID, now.Add(-time.Second).UnixMilli(), now.UnixMilli()))

	// Codex: a rollout held open by its process.
	cxHome := t.TempDir()
	const cxID = "019f7000-0000-7000-8000-000000000001"
	rollout := filepath.Join(cxHome, "sessions", "2026", "11", "30", "rollout-2026-11-30T09-00-00-"+cxID+".jsonl")
	mkfile(t, rollout, fmt.Sprintf(`{"timestamp":%q,"type":"session_meta","payload":{"id":%q,"cwd":"/srv/x","source":"cli"}}`+"\n"+
		`{"timestamp":%q,"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}`+"\n", ts, cxID, ts))
	cxPID := proctest.Hold(t, "codex", rollout, proctest.Write).Process.Pid

	// Pi (the runtime's binder): a journal whose pi process runs in its cwd.
	piHome, piCwd := t.TempDir(), t.TempDir()
	const piID = "019f0000-aaaa-7bbb-8ccc-0000000000aa"
	mkfile(t, filepath.Join(piHome, "sessions", "--proj--", "2026-12-01T10-00-00-000Z_"+piID+".jsonl"),
		fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":%q,"cwd":%q}`+"\n"+`{"type":"message","id":"u1","message":{"role":"user","content":"hi"}}`+"\n", piID, ts, piCwd))
	piCmd := exec.Command(proctest.Named(t, "pi"), "600")
	piCmd.Dir = piCwd
	piPID := proctest.Start(t, piCmd).Process.Pid

	type running struct {
		name string
		src  hub.Source
		hub  *sourcestest.Hub
		id   string
		pid  int
	}
	srcs := []running{
		{"example", example.New(example.Config{Home: exHome}), nil, "s1", exPID},
		{"claude-code", claudecode.New(claudecode.Options{Home: ccDir}), nil, ccID, ccPID},
		{"codex", codex.New(codex.Options{Home: cxHome}), nil, cxID, cxPID},
		{"pi", pi.New(sources.Options{Home: piHome}), nil, piID, piPID},
	}
	for i := range srcs {
		srcs[i].hub = kittest.Run(t, srcs[i].src, srcs[i].src.Info().Harnesses[0].ID)
	}
	for _, r := range srcs {
		r.hub.WaitFor(t, r.name+": the session bound to its live process", func(h *sourcestest.Hub) bool {
			s, ok := h.Shown(r.id)
			return ok && s.PID == r.pid && s.Status != sourcestest.StatusExited
		})
	}
	if _, ok := srcs[0].hub.Snapshot("s2"); !ok {
		t.Fatal("example: the unbound session is missing")
	}

	// Let the start settle (holder lookups, the registry watcher's first
	// read), then watch a quiet interval.
	before := sources.ReadActivity()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		n := sources.ReadActivity()
		if n == before {
			break
		}
		before = n
	}
	time.Sleep(time.Second)
	if after := sources.ReadActivity(); after != before {
		t.Errorf("while nothing changed: %d wake-ups, %d journal reads, %d timers fired; want none",
			after.Wakes-before.Wakes, after.Reads-before.Reads, after.Timers-before.Timers)
	}
}
