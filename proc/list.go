package proc

import (
	"os"
	"time"
)

// Process is one process List found: its pid, its parent, its working
// directory and when it started.
type Process struct {
	PID, PPID int
	Cwd       string
	Started   time.Time
}

// List makes one pass over the processes under root (normally Root) and
// returns those match accepts (e.g. Agent.Match), with their working
// directory and start time, in /proc's order. Processes that ended, or
// that cannot be inspected (other users'), are left out, and so is this
// one.
func List(root string, match func(root string, pid int) bool) []Process {
	t := tableAt(root)
	pids, err := t.pids()
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []Process
	for _, pid := range pids {
		if pid == self || !match(root, pid) {
			continue
		}
		cwd, err := t.cwd(pid)
		if err != nil {
			continue
		}
		st, err := ReadStat(root, pid)
		if err != nil {
			continue
		}
		at, err := StartedAt(st)
		if err != nil {
			continue
		}
		out = append(out, Process{PID: pid, PPID: st.PPID, Cwd: cwd, Started: at})
	}
	return out
}
