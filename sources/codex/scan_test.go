package codex

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestScanAtStart starts the source on a home that already has rollouts:
// one older than the scan window but held open by a process (read, bound
// to it), one recent that no process holds (its Codex is gone: exited),
// one old and not held (not read at all). The held one was written hours
// before its process started, as a resumed thread is.
func TestScanAtStart(t *testing.T) {
	home := t.TempDir()
	day := filepath.Join(home, "sessions", "2026", "11", "29")
	const (
		held   = "019e0000-0000-7000-8000-0000000000a1"
		recent = "019e0000-0000-7000-8000-0000000000a2"
		old    = "019e0000-0000-7000-8000-0000000000a3"
	)
	write := func(id string, age time.Duration) string {
		path := filepath.Join(day, "rollout-2026-11-29T10-00-00-"+id+".jsonl")
		r := createRollout(t, path)
		// written long before the process that holds it now started (a
		// resumed thread): that is not a reused pid
		r.addAt(time.Now().Add(-age), `"type":"session_meta","payload":{"id":"`+id+`","cwd":"/srv/x","source":"cli"}`,
			`"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}`)
		mt := time.Now().Add(-age)
		if err := os.Chtimes(path, mt, mt); err != nil {
			t.Fatal(err)
		}
		return path
	}
	helper := holdOpen(t, write(held, 5*time.Hour))
	write(recent, time.Minute)
	write(old, 5*time.Hour)

	s := startStream(t, New(Options{Home: home, Logger: slog.New(slog.DiscardHandler)}))
	got := s.waitFor(t, "initial state", func(m map[string]agentbridge.Snapshot) bool { return len(m) >= 2 })
	if len(got) != 2 {
		t.Errorf("sessions %v, want the held and the recent rollout only", got)
	}
	if s := got[held]; s.Status != agentbridge.StatusRunning || s.PID != helper.Process.Pid {
		t.Errorf("held rollout: %+v, want running with pid %d", s, helper.Process.Pid)
	}
	if s := got[recent]; s.Status != sourcestest.StatusExited || s.PID != 0 {
		t.Errorf("recent rollout nobody holds: %+v, want exited", s)
	}
	// the held one is watched: its process ending makes it exited
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	s.waitFor(t, "held rollout's process exited", func(m map[string]agentbridge.Snapshot) bool {
		return m[held].Status == sourcestest.StatusExited
	})
}

func TestInfo(t *testing.T) {
	info := New(Options{}).Info()
	if info.ID != "codex" || info.DisplayName != "Codex" || len(info.Harnesses) != 1 ||
		info.Harnesses[0] != (agentbridge.Harness{ID: "codex", DisplayName: "Codex"}) ||
		len(info.EnvironmentVariables) != 1 || info.EnvironmentVariables[0] != "CODEX_HOME" || info.Push {
		t.Errorf("Info() = %+v", info)
	}
	want := map[string]agentbridge.Observation{"waiting": agentbridge.Unavailable, "exited": agentbridge.Observed, "subagents": agentbridge.Observed}
	for k, v := range want {
		if info.Observes[k].How != v {
			t.Errorf("observes[%s] = %q, want %q", k, info.Observes[k].How, v)
		}
	}
}

func TestDefaultHome(t *testing.T) {
	t.Setenv(EnvHome, "/opt/codex-home/")
	if h, err := DefaultHome(); err != nil || h != "/opt/codex-home" {
		t.Errorf("DefaultHome() with CODEX_HOME = %q, %v", h, err)
	}
	t.Setenv(EnvHome, "")
	t.Setenv("HOME", "/home/someone")
	if h, err := DefaultHome(); err != nil || h != "/home/someone/.codex" {
		t.Errorf("DefaultHome() without CODEX_HOME = %q, %v", h, err)
	}
}
