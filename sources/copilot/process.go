package copilot

import (
	"os"
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
// already removed), the runtime's binder (Sessions.FindProcess) finds it:
// a Copilot process (Agent) whose working directory is the session's cwd
// and that was running when the session (re)started.

// maxDirEntries bounds how much of a session directory is listed when
// looking for lock files (Copilot keeps a handful of files there).
const maxDirEntries = 256

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

// Agent says which processes are Copilot CLI's: the native binary
// copilot (its main thread may be named MainThread; the executable is
// still copilot), or Node running Copilot's loader from its npm package
// (…/@github/copilot/index.js). The loader starts the native binary as its
// child; the runtime's binder takes the child.
var Agent = proc.Agent{Names: []string{"copilot"}, Runtimes: []string{"node"}, Scripts: []string{"copilot"}}

// startWindow is how soon after its process starts Copilot writes a new
// session's session.start: it settles which of two free Copilot processes
// in one cwd began the session (sources.ProcQuery.Window).
const startWindow = 30 * time.Second
