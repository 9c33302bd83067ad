package copilot

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/proc"
)

// How a session finds its Copilot process. Copilot does not keep
// events.jsonl open (it appends and closes), so the holder of the journal
// is usually nobody. What it does keep is a lock file in the session's
// directory, inuse.<pid>.lock, made by the process that has the session
// (at launch, and in the original directory again by `copilot --resume`,
// with its first prompt in 1.0.102):
// its name is the pid. Without a lock file (older versions, or a lock
// already removed), the process is found by its cwd and start time: a
// process named copilot (or node running Copilot's loader) whose working
// directory is the session's cwd and which started before the session's
// first record, the latest such one not bound to another session.

// maxDirEntries bounds how much of a session directory is listed when
// looking for lock files (Copilot keeps a handful of files there).
const maxDirEntries = 256

// startSlack is how much later than a session's first record its process
// may have started (clocks and rounding): /proc start times have 10 ms
// resolution, record timestamps are the agent's clock.
const startSlack = 2 * time.Second

// lockPIDs returns the pids the inuse.<pid>.lock files of a session
// directory name, in directory order.
func lockPIDs(dir string) []int {
	// openDir: a FIFO or device planted where the session directory
	// should be is refused instead of blocking the source.
	f, err := os.OpenFile(dir, os.O_RDONLY|openDir, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(maxDirEntries)
	var pids []int
	for _, n := range names {
		if pid := lockPID(n); pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// lockPID returns the pid a lock file name ("inuse.<pid>.lock") names, or 0.
func lockPID(name string) int {
	s, ok := strings.CutPrefix(name, "inuse.")
	if !ok {
		return 0
	}
	if s, ok = strings.CutSuffix(s, ".lock"); !ok || s == "" || len(s) > 7 {
		return 0
	}
	pid, err := strconv.Atoi(s)
	if err != nil || pid < 1 || pid > 4194304 || strconv.Itoa(pid) != s {
		return 0
	}
	return pid
}

// liveLatest returns the pid among pids whose process is alive and started
// last (a stale lock left by a crash names a dead or older process), or 0.
func liveLatest(root string, pids []int) int {
	best, bestStart := 0, uint64(0)
	for _, pid := range pids {
		st, err := proc.ReadStat(root, pid)
		if err == nil && (best == 0 || st.StartTime > bestStart) {
			best, bestStart = pid, st.StartTime
		}
	}
	return best
}

// candidate is a process that may run a session.
type candidate struct {
	pid     int
	cwd     string
	started time.Time
	native  bool // named copilot (the native binary), not its node loader
}

// copilotProcesses lists the processes under root (normally /proc) that
// look like Copilot CLI: comm "copilot" (or "MainThread" with the copilot
// binary as argv[0]: the native binary of 1.0.102), or "node" whose
// command line names Copilot. Unreadable processes (other users') are skipped.
func copilotProcesses(root string) []candidate {
	d, err := os.Open(root)
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []candidate
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(root, n)
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil {
			continue
		}
		c := candidate{pid: pid}
		switch string(bytes.TrimSpace(comm)) {
		case "copilot":
			c.native = true
		case "MainThread":
			// The native binary of Copilot 1.0.102 names its main thread
			// so: it is Copilot when its argv[0] is the copilot binary.
			cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
			if arg0, _, _ := bytes.Cut(cmd, []byte{0}); err != nil || filepath.Base(string(arg0)) != "copilot" {
				continue
			}
			c.native = true
		case "node":
			cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
			if err != nil || !isCopilotLoader(cmd) {
				continue
			}
		default:
			continue
		}
		if c.cwd, err = os.Readlink(filepath.Join(dir, "cwd")); err != nil {
			continue
		}
		st, err := proc.ReadStat(root, pid)
		if err != nil {
			continue
		}
		if c.started, err = proc.StartedAt(st); err != nil {
			continue
		}
		out = append(out, c)
	}
	return out
}

// isCopilotLoader reports whether a node command line (NUL-separated) runs
// Copilot CLI: an argument that is the copilot command or lies in its npm
// package.
func isCopilotLoader(cmdline []byte) bool {
	for _, a := range bytes.Split(cmdline, []byte{0}) {
		if bytes.Contains(a, []byte("@github/copilot")) || filepath.Base(string(a)) == "copilot" {
			return true
		}
	}
	return false
}

// pickByCwd returns the candidate for a session with cwd whose first
// record is from since: same cwd, started no later than since (plus
// startSlack), not taken; the native binary over its loader, then the
// latest start. 0 when none fits.
func pickByCwd(cands []candidate, cwd string, since time.Time, taken func(pid int) bool) int {
	var best *candidate
	for i := range cands {
		c := &cands[i]
		if c.cwd != cwd || taken(c.pid) || !since.IsZero() && c.started.After(since.Add(startSlack)) {
			continue
		}
		if best == nil || c.native && !best.native || c.native == best.native && c.started.After(best.started) {
			best = c
		}
	}
	if best == nil {
		return 0
	}
	return best.pid
}
