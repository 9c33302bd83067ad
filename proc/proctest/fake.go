package proctest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/proc"
)

// Proc is one process of a fake /proc tree.
type Proc struct {
	PID, PPID int
	Exe       string    // the executable's path (the exe link); "" none (another user's)
	Comm      string    // the command name; "" is the exe's base name
	Args      []string  // the command line; nil is Exe alone
	Cwd       string    // the working directory (the cwd link); "" none
	Started   time.Time // when it started (stat field 22, from the real boot time)
	Writes    []string  // files it holds open for writing (fd 3, 4, …)
	Threads   int       // its thread count; 0 is 8, a running agent's (a process forked and not yet exec'd has 1)
}

// Tree is a fake /proc: a directory laid out as the proc file system is
// (<pid>/stat, comm, cmdline, exe, cwd, fd, fdinfo), read by package proc
// like the real one. It also watches its processes' exits as
// sources.Processes does (Root and Watch): Kill ends a process and calls
// its watchers. It is safe for concurrent use.
type Tree struct {
	t    testing.TB
	root string

	mu      sync.Mutex
	watches map[int][]watch
}

type watch struct {
	ctx    context.Context
	start  uint64
	onExit func()
}

// Boot is when the machine of a fake tree booted (the btime of its
// root/stat): its processes may have started at any time since.
var Boot = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// Fake returns an empty fake /proc tree in a temporary directory.
func Fake(t testing.TB) *Tree {
	t.Helper()
	f := &Tree{t: t, root: t.TempDir(), watches: map[int][]watch{}}
	if err := os.WriteFile(filepath.Join(f.root, "stat"), []byte("cpu  1 2 3 4\nbtime "+strconv.FormatInt(Boot.Unix(), 10)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// Unseen returns a machine whose processes cannot be listed (no proc file
// system: no boot time): the runtime's binder binds no session to a
// process and ends none for want of one. For replays of recordings, which
// hold the journals but not the processes that wrote them.
func Unseen(t testing.TB) *Tree {
	t.Helper()
	return &Tree{t: t, root: t.TempDir(), watches: map[int][]watch{}}
}

// Root is the tree's directory, to read as /proc.
func (f *Tree) Root() string { return f.root }

// Ticks returns the start time at, as a fake tree's <pid>/stat counts it:
// clock ticks since Boot.
func Ticks(t testing.TB, at time.Time) uint64 {
	t.Helper()
	if at.Before(Boot) {
		t.Fatalf("a fake process cannot start before the fake boot (%v)", Boot)
	}
	return uint64(at.Sub(Boot) / (10 * time.Millisecond))
}

// Add puts p in the tree and returns its start time in clock ticks. A
// process of the same pid ends first (Kill): the pid is reused.
func (f *Tree) Add(p Proc) uint64 {
	f.t.Helper()
	dir := filepath.Join(f.root, strconv.Itoa(p.PID))
	if _, err := os.Stat(dir); err == nil {
		f.Kill(p.PID) // the pid is reused: its process ended
	}
	if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "fdinfo"), 0o755); err != nil {
		f.t.Fatal(err)
	}
	comm := p.Comm
	if comm == "" {
		comm = filepath.Base(p.Exe)
	}
	args := p.Args
	if args == nil {
		args = []string{p.Exe}
	}
	threads := p.Threads
	if threads == 0 {
		threads = 8
	}
	ticks := Ticks(f.t, p.Started)
	stat := strconv.Itoa(p.PID) + " (" + comm + ") S " + strconv.Itoa(p.PPID) + " 1 1 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 " + strconv.Itoa(threads) + " 0 " + strconv.FormatUint(ticks, 10) + " 0 0\n"
	files := map[string]string{"stat": stat, "comm": comm + "\n", "cmdline": strings.Join(args, "\x00") + "\x00"}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	links := map[string]string{"exe": p.Exe, "cwd": p.Cwd}
	for i, w := range p.Writes {
		fd := strconv.Itoa(3 + i)
		links["fd/"+fd] = w
		if err := os.WriteFile(filepath.Join(dir, "fdinfo", fd), []byte("pos:\t0\nflags:\t02102001\n"), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	for n, target := range links {
		if target == "" {
			continue
		}
		if err := os.Symlink(target, filepath.Join(dir, n)); err != nil {
			f.t.Fatal(err)
		}
	}
	return ticks
}

// Kill ends process pid: it leaves the tree and its watchers are told.
func (f *Tree) Kill(pid int) {
	f.t.Helper()
	if err := os.RemoveAll(filepath.Join(f.root, strconv.Itoa(pid))); err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	ws := f.watches[pid]
	delete(f.watches, pid)
	f.mu.Unlock()
	for _, w := range ws {
		if w.ctx.Err() == nil {
			go w.onExit()
		}
	}
}

// Watch implements sources.Processes: onExit is called when Kill ends
// pid; proc.ErrNoProcess when pid is not in the tree or started at
// another time (start 0: any).
func (f *Tree) Watch(ctx context.Context, pid int, start uint64, onExit func()) error {
	st, err := proc.ReadStat(f.root, pid)
	if err != nil || (start != 0 && st.StartTime != start) {
		return proc.ErrNoProcess
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watches[pid] = append(f.watches[pid], watch{ctx, start, onExit})
	return nil
}

// Watched reports whether a watch of pid is live (not ended by its
// context).
func (f *Tree) Watched(pid int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watches[pid] {
		if w.ctx.Err() == nil {
			return true
		}
	}
	return false
}

// Running returns a fake /proc tree in which a process of the agent runs
// in each of cwds: exe (its executable's path, its base name the command
// name), started at Boot, pids RunningPID, RunningPID+1, … A source's
// test that follows a session as it runs gives it this tree
// (sources.Options.Processes): with no process of the agent, the session
// would end at once.
func Running(t testing.TB, exe string, cwds ...string) *Tree {
	t.Helper()
	f := Fake(t)
	for i, cwd := range cwds {
		f.Add(Proc{PID: RunningPID + i, PPID: 1, Exe: exe, Cwd: cwd, Started: Boot})
	}
	return f
}

// RunningPID is the pid of the first process of Running.
const RunningPID = 4000001

// Unknown is a sources.Processes that can tell nothing (no proc file
// system, as on another system): sessions are neither bound nor ended by
// it. For a replay of recorded journals whose processes are not there.
var Unknown unknown

type unknown struct{}

// Root is a directory that does not exist.
func (unknown) Root() string { return "/nonexistent/proc" }

// Watch reports that no process can be watched.
func (unknown) Watch(context.Context, int, uint64, func()) error { return proc.ErrNoProcess }
