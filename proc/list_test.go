package proc_test

import (
	"os"
	"os/exec"
	"strconv"
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

// TestStartedAtInLongUptime: a process started years after the boot (a
// machine up that long, or a fake tree booted long ago) has its start
// time right: the tick count does not overflow on the way.
func TestStartedAtInLongUptime(t *testing.T) {
	root := t.TempDir()
	boot := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.WriteFile(root+"/stat", []byte("cpu 1\nbtime "+strconv.FormatInt(boot.Unix(), 10)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ticks := uint64(want.Sub(boot) / (10 * time.Millisecond))
	got, err := proc.StartedAtIn(root, proc.Stat{StartTime: ticks})
	if err != nil || !got.Equal(want) {
		t.Errorf("StartedAtIn = %v, %v; want %v", got, err, want)
	}
	if _, err := proc.StartedAtIn(t.TempDir(), proc.Stat{}); err == nil {
		t.Error("a root without a boot time gave a start time")
	}
}
