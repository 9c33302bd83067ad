package proc

import (
	"errors"
	"testing"
	"time"
)

// fakeTable is a process table whose stat answers are given.
type fakeTable map[int]Stat

func (f fakeTable) pids() ([]int, error) {
	return []int{1, 2, 3}, nil
}

func (f fakeTable) stat(pid int) (Stat, error) {
	st, ok := f[pid]
	if !ok {
		return Stat{}, ErrNoProcess
	}
	return st, nil
}

func (fakeTable) exe(int) (string, error)            { return "", errors.ErrUnsupported }
func (fakeTable) comm(int) (string, error)           { return "", errors.ErrUnsupported }
func (fakeTable) cmdline(int, int64) ([]byte, error) { return nil, errors.ErrUnsupported }
func (fakeTable) cwd(pid int) (string, error)        { return "/w", nil }

// A start time the table gives (macOS: the kernel's, no boot time to add
// ticks to) is the process's; ticks since boot count from the boot time
// (Linux); without either, the process is left out rather than given a
// wrong start; a process gone between the listing and its stat too.
func TestListStartTimes(t *testing.T) {
	started := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	boot := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	tab := fakeTable{
		1: {PID: 1, PPID: 0, Started: started, StartTime: 1764842400000000},
		2: {PID: 2, PPID: 1, StartTime: 150, Threads: 3},
	}
	all := func(int) bool { return true }

	got := list(tab, boot, all)
	if len(got) != 2 || !got[0].Started.Equal(started) || !got[1].Started.Equal(boot.Add(1500*time.Millisecond)) || got[1].Threads != 3 {
		t.Fatalf("with a boot time: %+v", got)
	}
	got = list(tab, time.Time{}, all)
	if len(got) != 1 || got[0].PID != 1 || !got[0].Started.Equal(started) {
		t.Fatalf("without a boot time: %+v", got)
	}
	if got := list(tab, boot, func(pid int) bool { return pid == 2 }); len(got) != 1 || got[0].PID != 2 || got[0].Cwd != "/w" {
		t.Fatalf("match: %+v", got)
	}
}
