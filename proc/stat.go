// Package proc reads what the bridge needs to know about processes and
// watches their exit: which process holds a journal open, its parent and
// start time (to guard against pid reuse), and when it ends. It never
// polls. On Linux it reads /proc and watches exits with pidfd; on macOS it
// asks the kernel (sysctl) and watches exits with kqueue, and cannot tell
// which process holds a file open yet (HoldersKnown). Other platforms
// build, and find no process.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrNoProcess means the process does not exist (any more).
var ErrNoProcess = errors.New("proc: no such process")

// Stat is what /proc/<pid>/stat says of a process that the bridge uses.
type Stat struct {
	PID       int
	PPID      int
	StartTime uint64 // clock ticks since boot (macOS: µs since the epoch); with PID, names one process
	Threads   int    // how many threads it runs now (0: not known, macOS)

	// Started is when the process started, where the table says so
	// directly (macOS); zero on Linux, where StartedAt computes it.
	Started time.Time
}

// ReadStat reads what /proc/<pid>/stat under root (normally Root) says of
// a process; ErrNoProcess when there is none.
func ReadStat(root string, pid int) (Stat, error) {
	st, err := tableAt(root).stat(pid)
	if err != nil && !errors.Is(err, ErrNoProcess) {
		return Stat{}, fmt.Errorf("proc: read stat of %d: %w", pid, err)
	}
	return st, err
}

// parseStat parses the stat line. The command name (field 2) is in
// parentheses and may itself contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(pid int, b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return Stat{}, fmt.Errorf("proc: malformed stat of %d", pid)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("proc: short stat of %d", pid)
	}
	ppid, err := strconv.Atoi(string(f[1])) // field 4
	if err != nil {
		return Stat{}, fmt.Errorf("proc: stat of %d: ppid: %w", pid, err)
	}
	threads, err := strconv.Atoi(string(f[17])) // field 20
	if err != nil {
		return Stat{}, fmt.Errorf("proc: stat of %d: threads: %w", pid, err)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64) // field 22
	if err != nil {
		return Stat{}, fmt.Errorf("proc: stat of %d: start time: %w", pid, err)
	}
	return Stat{PID: pid, PPID: ppid, StartTime: start, Threads: threads}, nil
}
