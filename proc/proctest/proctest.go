// Package proctest starts stand-in agent processes for tests: a process
// with a chosen executable name holding a journal open for reading (as
// tail -f does) or for writing (as the agent does).
package proctest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testenv"
)

// Flags for Hold.
const (
	Read  = os.O_RDONLY                             // a reader: tail -f, less, cp
	Write = os.O_WRONLY | os.O_APPEND | os.O_CREATE // the agent appending to its journal
)

// Hold starts a process that holds path open with flag (Read or Write) as
// its descriptor 3 and lives until it is killed, at the end of the test at
// the latest. name is its executable's base name (and command name): a
// copy of sleep(1) under that name, so that an agent matcher sees, say,
// "codex"; "" runs sleep itself. The test is skipped when no process can
// be started.
func Hold(t testing.TB, name, path string, flag int) *exec.Cmd {
	t.Helper()
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(Named(t, name), "600")
	cmd.ExtraFiles = []*os.File{f}
	return Start(t, cmd)
}

// Start starts cmd and kills and reaps it at the end of the test; the test
// is skipped when it cannot start.
func Start(t testing.TB, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	for try := 0; ; try++ {
		err := cmd.Start()
		if errors.Is(err, syscall.ETXTBSY) && try < 50 {
			// A process forked meanwhile still holds a fresh copy made by
			// Named open for writing until its exec: try again with a
			// fresh Cmd.
			time.Sleep(10 * time.Millisecond)
			next := exec.Command(cmd.Path, cmd.Args[1:]...)
			next.Env, next.Dir, next.ExtraFiles, next.SysProcAttr = cmd.Env, cmd.Dir, cmd.ExtraFiles, cmd.SysProcAttr
			next.Stdin, next.Stdout, next.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
			cmd = next
			continue
		}
		if err != nil {
			testenv.Missing(t, "cannot start a child process: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
}

// Named returns the path of an executable that sleeps for its argument in
// seconds and whose base name is name: sleep(1) itself when name is "", a
// copy of it in a temporary directory otherwise.
func Named(t testing.TB, name string) string {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		testenv.Missing(t, "needs sleep(1): %v", err)
	}
	if name == "" || name == "sleep" {
		return sleep
	}
	data, err := os.ReadFile(sleep)
	if err != nil {
		testenv.Missing(t, "cannot copy sleep(1): %v", err)
	}
	bin := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
