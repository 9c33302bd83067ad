// Package kittest has the test helpers that the Pi, Kiro CLI and Mistral
// Vibe sources' live tests share: running a source against a fake hub,
// appending to a journal as an agent does, and standing in for the
// agent's process.
package kittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// Run runs src with harness enabled against a fake hub until the test
// ends (sourcestest.Run).
func Run(t *testing.T, src hub.Source, harness string) *sourcestest.Hub {
	t.Helper()
	return sourcestest.Run(t, src, []string{harness})
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

// Is returns a WaitFor condition: session id exists and passes cond. The
// snapshot cond sees has the status a user sees (sourcestest.Hub.Shown).
func Is(id string, cond func(agentbridge.Snapshot) bool) func(*sourcestest.Hub) bool {
	return func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(id)
		return ok && cond(s)
	}
}

// Status returns a WaitFor condition: session id shows status want
// (sourcestest.ShownStatus: sourcestest.StatusDone and StatusExited too).
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
		testenv.Missing(t, "no sleep binary")
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
