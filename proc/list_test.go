package proc_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/proc"
)

// TestList: List finds the processes its match accepts, with their
// working directory, parent and start time, and never this process.
func TestList(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	cmd.Dir = dir
	before := time.Now().Add(-2 * time.Second)
	if err := cmd.Start(); err != nil {
		testenv.Missing(t, "cannot start a child: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	child := cmd.Process.Pid
	got := proc.List(proc.Root, func(_ string, pid int) bool { return pid == child || pid == os.Getpid() })
	if len(got) != 1 {
		t.Fatalf("List = %+v, want the child alone", got)
	}
	p := got[0]
	if p.PID != child || p.PPID != os.Getpid() || p.Cwd != dir || p.Started.Before(before) || p.Started.After(time.Now().Add(2*time.Second)) {
		t.Errorf("List = %+v, want pid %d, parent %d, cwd %s, started about now", p, child, os.Getpid(), dir)
	}
	if l := proc.List(t.TempDir(), func(string, int) bool { return true }); len(l) != 0 {
		t.Errorf("List of a directory with no processes = %+v", l)
	}
}
