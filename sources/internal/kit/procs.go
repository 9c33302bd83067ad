package kit

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/proc"
)

// Procs finds an agent's process by what its journal cannot say: Pi,
// Kiro CLI and Mistral Vibe open their journals only for each write, so no
// process holds one open. Their process keeps the session's working
// directory as its own, and carries the agent's name as its command
// (/proc/<pid>/comm). Sessions are queued with Want and looked up together
// with one pass over /proc at Flush (called from the handler's Idle, so a
// scan of many journals costs one pass; never on a timer).
type Procs struct {
	// Root is where the proc file system is mounted (proc.Root).
	Root string
	// Names are the command names (comm, at most 15 bytes) of the agent.
	Names []string
	// Window, when not zero, settles a cwd that several agent processes
	// share, for an agent whose new session begins (its session.started
	// time) right after its process starts (Pi creates the session at
	// startup): the one process of that cwd that started at most Window
	// before the session began, and is no other live session's, is its
	// writer (see Flush).
	Window time.Duration

	pending map[string]want // by session id
}

type want struct {
	cwd, journal string
	born         time.Time // when the session began; zero when unknown
}

// Want queues session id, whose working directory is cwd, whose journal
// is at journal, and which began at born (zero when unknown), for a
// lookup.
func (p *Procs) Want(id, cwd, journal string, born time.Time) {
	if cwd == "" {
		return
	}
	if p.pending == nil {
		p.pending = map[string]want{}
	}
	p.pending[id] = want{cwd, journal, born}
}

// Flush makes one pass over /proc and calls bind, in session id order,
// for each queued session whose cwd exactly one agent process has that
// was already running when the journal was last written (the writer was;
// a later process in the same directory is another session's).
//
// A cwd that several such processes share binds nothing (a wrong process
// would report a false exit), unless Window is set and exactly one of them
// started within Window before the session began (up to startSlack after:
// the clocks are coarse) and is not taken, i.e. bound to another session
// that has not exited (taken(id, pid) reports that; a process bound
// earlier in this Flush is taken too). That is the process that created the session: two
// TUIs started one after the other in one directory get one session each.
// A session begun long after its process started (a new session inside a
// running process) finds no process in its window and stays unbound.
func (p *Procs) Flush(bind func(id string, pid int), taken func(id string, pid int) bool) {
	if len(p.pending) == 0 {
		return
	}
	byCwd := p.scan()
	ids := make([]string, 0, len(p.pending))
	for id := range p.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	bound := map[int]bool{}
	for _, id := range ids {
		w := p.pending[id]
		fi, err := os.Stat(w.journal)
		if err != nil {
			continue
		}
		var writers []candidate
		for _, c := range byCwd[w.cwd] {
			if !c.start.After(fi.ModTime().Add(startSlack)) {
				writers = append(writers, c)
			}
		}
		if len(writers) > 1 {
			writers = p.creator(writers, w.born, func(pid int) bool { return bound[pid] || (taken != nil && taken(id, pid)) })
		}
		if len(writers) == 1 {
			bound[writers[0].pid] = true
			bind(id, writers[0].pid)
		}
	}
	clear(p.pending)
}

// creator returns, of the processes that share a session's cwd, those that
// may have created it at born: started within Window before it and not
// taken (none when Window or born is zero).
func (p *Procs) creator(cands []candidate, born time.Time, taken func(pid int) bool) []candidate {
	if p.Window <= 0 || born.IsZero() {
		return nil
	}
	var out []candidate
	for _, c := range cands {
		if !c.start.Before(born.Add(-p.Window)) && !c.start.After(born.Add(startSlack)) && !taken(c.pid) {
			out = append(out, c)
		}
	}
	return out
}

// startSlack allows for the coarse clocks behind a process start time
// (clock ticks since boot) and a file's modification time.
const startSlack = time.Second

type candidate struct {
	pid   int
	start time.Time
}

// scan returns, per working directory, the agent processes that have it.
// Processes that end meanwhile or may not be inspected are skipped, and so
// is the bridge itself, and so are the agent's own children (topmost).
func (p *Procs) scan() map[string][]candidate {
	out := map[string][]candidate{}
	for _, c := range topmost(proc.List(p.Root, p.named)) {
		out[c.Cwd] = append(out[c.Cwd], candidate{c.PID, c.Started})
	}
	return out
}

// topmost leaves out of ps the processes whose parent is in ps too. A
// child of an agent process that carries the agent's name is the agent
// starting a tool, caught between fork and exec (it has the agent's
// name and cwd until its exec: Pi forks bash right after it writes the
// journal that makes the bridge look), or a worker of the agent: never a
// second agent. Counted as one, it made a session's one TUI look like
// two, and the session stayed without a process.
func topmost(ps []proc.Process) []proc.Process {
	pids := make(map[int]bool, len(ps))
	for _, c := range ps {
		pids[c.PID] = true
	}
	return slices.DeleteFunc(slices.Clone(ps), func(c proc.Process) bool { return pids[c.PPID] })
}

// named reports whether process pid's command name (comm) is exactly one
// of Names.
func (p *Procs) named(root string, pid int) bool {
	comm, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "comm"))
	return err == nil && slices.Contains(p.Names, strings.TrimSpace(string(comm)))
}
