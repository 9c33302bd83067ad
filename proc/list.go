package proc

import (
	"os"
	"time"
)

// Process is one process List found: its pid, its parent, its working
// directory, when it started and how many threads it runs.
type Process struct {
	PID, PPID int
	Cwd       string
	Started   time.Time
	StartTime uint64 // Stat.StartTime: with PID, names this process (see Watch)
	Threads   int
}

// List makes one pass over the processes under root (normally Root) and
// returns those match accepts (e.g. Agent.Match), with their working
// directory and start time, in /proc's order. Processes that ended, or
// that cannot be inspected (other users'), are left out, and so is this
// one.
func List(root string, match func(root string, pid int) bool) []Process {
	// Linux: the boot time, read once for the pass; macOS's table says
	// when each process started (Stat.Started) and has no /proc/stat.
	boot, _ := StartedAtIn(root, Stat{}) // zero when unknown
	return list(tableAt(root), boot, func(pid int) bool { return match(root, pid) })
}

// list is List over table t; boot is the boot time (zero: unknown, so a
// process whose start the table does not give is left out).
func list(t table, boot time.Time, match func(pid int) bool) []Process {
	pids, err := t.pids()
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []Process
	for _, pid := range pids {
		if pid == self || !match(pid) {
			continue
		}
		cwd, err := t.cwd(pid)
		if err != nil {
			continue
		}
		st, err := t.stat(pid)
		if err != nil {
			continue
		}
		at := st.Started
		if at.IsZero() {
			if boot.IsZero() {
				continue
			}
			at = boot.Add(time.Duration(st.StartTime) * (time.Second / userHZ))
		}
		out = append(out, Process{PID: pid, PPID: st.PPID, Cwd: cwd, Started: at, StartTime: st.StartTime, Threads: st.Threads})
	}
	return out
}
