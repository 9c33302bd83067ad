// Package proc reads what the bridge needs to know about processes from
// /proc and watches their exit with pidfd: which process holds a journal
// open, its parent and start time (to guard against pid reuse), and when it
// ends. It never polls.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// ErrNoProcess means the process does not exist (any more).
var ErrNoProcess = errors.New("proc: no such process")

// Stat is what /proc/<pid>/stat says of a process that the bridge uses.
type Stat struct {
	PID       int
	PPID      int
	StartTime uint64 // clock ticks since boot; with PID, names one process
	Threads   int    // how many threads it runs now
}

// ReadStat reads /proc/<pid>/stat under root (normally "/proc").
func ReadStat(root string, pid int) (Stat, error) {
	b, err := os.ReadFile(root + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Stat{}, ErrNoProcess
		}
		return Stat{}, fmt.Errorf("proc: read stat of %d: %w", pid, err)
	}
	return parseStat(pid, b)
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
