// Package kittest has the test helpers that the Pi, Kiro CLI and Mistral
// Vibe sources' live tests share: running a source against a fake hub,
// appending to a journal as an agent does, and standing in for the
// agent's process.
package kittest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// Run runs src with harness enabled against a fake hub until the test
// ends, and then checks that Run returned and that the hub refused nothing.
func Run(t *testing.T, src hub.Source, harness string) *sourcestest.Hub {
	t.Helper()
	h := sourcestest.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, hub.Start{Enabled: []string{harness}, Publisher: h}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
		if n := h.Refused(); n > 0 {
			t.Errorf("the hub refused %d calls", n)
		}
	})
	return h
}

// Append appends s to the file at path, creating it (and its directory).
func Append(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// Replace writes s to path as agents rewrite their side files: to a
// temporary file beside it, renamed over it.
func Replace(t *testing.T, path, s string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Is returns a WaitFor condition: session id exists and passes cond.
func Is(id string, cond func(agentbridge.Snapshot) bool) func(*sourcestest.Hub) bool {
	return func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot(id)
		return ok && cond(s)
	}
}

// Status returns a WaitFor condition: session id has status want.
func Status(id string, want agentbridge.Status) func(*sourcestest.Hub) bool {
	return Is(id, func(s agentbridge.Snapshot) bool { return s.Status == want })
}

// StartAgent runs a process whose command name is name (a symbolic link
// to sleep) in dir, as the agent's own process would be; it is killed when
// the test ends.
func StartAgent(t *testing.T, name, dir string) *exec.Cmd {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	bin := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(sleep, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}
