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

	pending map[string]want // by session id
}

type want struct{ cwd, journal string }

// Want queues session id, whose working directory is cwd and whose journal
// is at journal, for a lookup.
func (p *Procs) Want(id, cwd, journal string) {
	if cwd == "" {
		return
	}
	if p.pending == nil {
		p.pending = map[string]want{}
	}
	p.pending[id] = want{cwd, journal}
}

// Flush makes one pass over /proc and calls bind, in session id order,
// for each queued session whose cwd exactly one agent process has that
// was already running when the journal was last written (the writer was;
// a later process in the same directory is another session's). An
// ambiguous cwd (two agents in one directory) binds nothing: a wrong
// process would report a false exit.
func (p *Procs) Flush(bind func(id string, pid int)) {
	if len(p.pending) == 0 {
		return
	}
	byCwd := p.scan()
	ids := make([]string, 0, len(p.pending))
	for id := range p.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		w := p.pending[id]
		fi, err := os.Stat(w.journal)
		if err != nil {
			continue
		}
		var writers []int
		for _, c := range byCwd[w.cwd] {
			if !c.start.After(fi.ModTime().Add(startSlack)) {
				writers = append(writers, c.pid)
			}
		}
		if len(writers) == 1 {
			bind(id, writers[0])
		}
	}
	clear(p.pending)
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
// is the bridge itself.
func (p *Procs) scan() map[string][]candidate {
	out := map[string][]candidate{}
	ents, err := os.ReadDir(p.Root)
	if err != nil {
		return out
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == self {
			continue
		}
		dir := filepath.Join(p.Root, e.Name())
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil || !slices.Contains(p.Names, strings.TrimSpace(string(comm))) {
			continue
		}
		cwd, err := os.Readlink(filepath.Join(dir, "cwd"))
		if err != nil {
			continue
		}
		st, err := proc.ReadStat(p.Root, pid)
		if err != nil {
			continue
		}
		start, err := proc.StartedAt(st)
		if err != nil {
			continue
		}
		out[cwd] = append(out[cwd], candidate{pid, start})
	}
	return out
}
