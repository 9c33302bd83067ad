package sources

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// piAgent is the agent of the binder tests: a process named pi, or Node
// running pi's package.
var piAgent = proc.Agent{Names: []string{"pi"}, Runtimes: []string{"node"}, Packages: []string{"pi-coding-agent"}}

// TestPick: the binder's rules, on a fake /proc tree as proc.List reads it.
func TestPick(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) // the journal's last write
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tree := proctest.Fake(t)
	journal := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(journal, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []proctest.Proc{
		{PID: 10, Exe: "/usr/bin/pi", Cwd: "/a", Started: at(-time.Hour)},        // alone in /a
		{PID: 20, Exe: "/usr/bin/pi", Cwd: "/b", Started: at(-time.Hour)},        // two in /b
		{PID: 21, Exe: "/usr/bin/pi", Cwd: "/b", Started: at(-10 * time.Second)}, //
		{PID: 30, Exe: "/usr/bin/vim", Cwd: "/c", Started: at(-time.Hour)},       // not the agent
		{PID: 40, Exe: "/usr/bin/pi", Cwd: "/d", Started: at(time.Minute)},       // started after the write
		{PID: 50, Exe: "/usr/bin/node", Comm: "node", Cwd: "/e", Started: at(-time.Hour), // a launcher and its child
			Args: []string{"node", "/usr/lib/node_modules/pi-coding-agent/dist/cli.js"}},
		{PID: 51, PPID: 50, Exe: "/usr/bin/pi", Cwd: "/e", Started: at(-time.Hour)},
		{PID: 60, Exe: "/usr/bin/pi", Cwd: "/f", Started: at(-time.Hour)}, // two in /f, one writing the journal
		{PID: 61, Exe: "/usr/bin/pi", Cwd: "/f", Started: at(-time.Hour), Writes: []string{journal}},
		{PID: 70, Exe: "/opt/pi-coding-agent/helper", Comm: "helper", Cwd: "/g", Started: at(-time.Hour)}, // in the package's directory
		{PID: 80, Exe: "/usr/bin/pi", Cwd: "/h", Started: at(-time.Hour)},                                 // a TUI forking its bash tool,
		{PID: 81, PPID: 80, Exe: "/usr/bin/pi", Cwd: "/h", Started: at(-time.Second), Threads: 1},         // caught before exec
		{PID: 90, Exe: "/usr/bin/node", Comm: "node", Cwd: "/i", Started: at(-time.Hour), // a relaunching CLI:
			Args: []string{"node", "/usr/lib/node_modules/pi-coding-agent/dist/cli.js"}},
		{PID: 91, PPID: 90, Exe: "/usr/bin/node", Comm: "node", Cwd: "/i", Started: at(-time.Hour), // its relaunched child writes
			Args: []string{"node", "--max-old-space-size=8192", "/usr/lib/node_modules/pi-coding-agent/dist/cli.js"}},
		{PID: 92, PPID: 91, Exe: "/usr/bin/node", Comm: "node", Cwd: "/i", Started: at(-time.Second), Threads: 1, // and forks git
			Args: []string{"node", "--max-old-space-size=8192", "/usr/lib/node_modules/pi-coding-agent/dist/cli.js"}},
		{PID: 93, PPID: 92, Exe: "/usr/bin/node", Comm: "node", Cwd: "/i", Started: at(-time.Second), Threads: 1, // a fork's fork
			Args: []string{"node", "--max-old-space-size=8192", "/usr/lib/node_modules/pi-coding-agent/dist/cli.js"}},
		{PID: 100, Exe: "/usr/bin/pi", Cwd: "/j", Started: at(-time.Hour)},                                            // two TUIs in /j,
		{PID: 101, Exe: "/usr/bin/pi", Cwd: "/j", Started: at(-time.Minute)},                                          //
		{PID: 102, PPID: 101, Exe: "/usr/bin/pi", Cwd: "/j", Started: at(-time.Second), Threads: 1},                   // one forking
		{PID: 110, Exe: "/usr/bin/pi", Cwd: "/k", Started: at(-time.Hour), Threads: 1},                                // a one-thread agent
		{PID: 111, PPID: 110, Exe: "/usr/lib/pi-coding-agent/worker", Cwd: "/k", Started: at(-time.Hour), Threads: 1}, // starting another program of its own
	} {
		if p.PPID == 0 {
			p.PPID = 1
		}
		tree.Add(p)
	}
	all := dropForks(tree.Root(), proc.List(tree.Root(), piAgent.Match))
	taken := func(pids ...int) func(int) bool {
		return func(pid int) bool {
			for _, p := range pids {
				if p == pid {
					return true
				}
			}
			return false
		}
	}
	holds := func(pids []int) []int {
		w, _ := proc.FindWriters(tree.Root(), journal, piAgent)
		return w
	}
	for _, tc := range []struct {
		name  string
		q     ProcQuery
		taken func(int) bool
		pid   int
		none  bool
	}{
		{"the agent alone in the cwd", ProcQuery{Cwd: "/a", Running: t0}, nil, 10, false},
		{"alone, even when another session has it (/clear)", ProcQuery{Cwd: "/a", Running: t0}, taken(10), 10, false},
		{"alone, another session's, and it did not begin this one: no telling", ProcQuery{Cwd: "/a", Running: t0, Born: at(-time.Minute), Window: 20 * time.Second}, taken(10), 0, false},
		{"alone, another session's, and it began this one", ProcQuery{Cwd: "/a", Running: t0, Born: at(-time.Hour + 5*time.Second), Window: 20 * time.Second}, taken(10), 10, false},
		{"no process in the cwd: ended", ProcQuery{Cwd: "/z", Running: t0}, nil, 0, true},
		{"another program in the cwd: ended", ProcQuery{Cwd: "/c", Running: t0}, nil, 0, true},
		{"started after the journal's last write: ended", ProcQuery{Cwd: "/d", Running: t0}, nil, 0, true},
		{"started after, but the write time is unknown", ProcQuery{Cwd: "/d"}, nil, 40, false},
		{"two in one cwd: the one no other session has", ProcQuery{Cwd: "/b", Running: t0}, taken(20), 21, false},
		{"two in one cwd, both free: no telling", ProcQuery{Cwd: "/b", Running: t0}, nil, 0, false},
		{"two in one cwd: the one started just before the session", ProcQuery{Cwd: "/b", Running: t0, Born: at(-8 * time.Second), Window: 20 * time.Second}, nil, 21, false},
		{"two in one cwd: a session begun long after both", ProcQuery{Cwd: "/b", Running: t0, Born: at(time.Hour), Window: 20 * time.Second}, nil, 0, false},
		{"two in one cwd: the pid the log names", ProcQuery{Cwd: "/b", Running: t0, PID: 20}, nil, 20, false},
		{"a pid the log names that is not a candidate", ProcQuery{Cwd: "/b", Running: t0, PID: 10}, nil, 0, false},
		{"two in one cwd: the one started just before its log's run", ProcQuery{Cwd: "/b", Running: t0, Started: at(-9 * time.Second)}, nil, 21, false},
		{"two in one cwd: the earlier one by its log's run", ProcQuery{Cwd: "/b", Running: t0, Started: at(-time.Hour + 3*time.Second)}, nil, 20, false},
		{"the log's run began when no candidate did: ended", ProcQuery{Cwd: "/b", Running: t0, Started: at(-30 * time.Minute)}, nil, 0, true},
		{"the one just before its run is another run's: ended", ProcQuery{Cwd: "/b", Running: t0, Started: at(-5 * time.Second),
			Runs: []time.Time{at(-time.Hour + time.Second), at(-9 * time.Second), at(-5 * time.Second)}}, nil, 0, true},
		{"runs told apart", ProcQuery{Cwd: "/b", Running: t0, Started: at(-9 * time.Second),
			Runs: []time.Time{at(-time.Hour + time.Second), at(-9 * time.Second), at(-5 * time.Second)}}, nil, 21, false},
		{"two in one cwd: the one writing the journal", ProcQuery{Cwd: "/f", Running: t0, Journal: journal}, nil, 61, false},
		{"the launcher's child, not the launcher", ProcQuery{Cwd: "/e", Running: t0}, nil, 51, false},
		{"a TUI, not its tool caught between fork and exec", ProcQuery{Cwd: "/h", Running: t0}, nil, 80, false},
		{"the relaunched child, not its forks of git", ProcQuery{Cwd: "/i", Running: t0}, nil, 91, false},
		{"two TUIs, one forking: the one no other session has", ProcQuery{Cwd: "/j", Running: t0}, taken(100), 101, false},
		{"two TUIs, one forking: no telling", ProcQuery{Cwd: "/j", Running: t0}, nil, 0, false},
		{"a one-thread agent's child running another program is no fork", ProcQuery{Cwd: "/k", Running: t0}, nil, 111, false},
		{"a cwd matched by a function", ProcQuery{CwdMatch: func(c string) bool { return strings.HasSuffix(c, "a") }, Running: t0}, nil, 10, false},
		{"any cwd: the one free process", ProcQuery{AnyCwd: true, Running: at(-30 * time.Minute)}, taken(10, 20, 21, 51, 60, 61, 80, 91, 100, 101, 111), 70, false},
		{"any cwd: never a taken one alone", ProcQuery{AnyCwd: true, Running: at(-30 * time.Minute)}, taken(10, 20, 21, 51, 60, 61, 70, 80, 91, 100, 101, 111), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid, none := pick(all, tc.q, tc.taken, holds)
			if pid != tc.pid || none != tc.none {
				t.Errorf("pick = %d, none %v; want %d, none %v", pid, none, tc.pid, tc.none)
			}
		})
	}
}

// findLines maps lines "<session> <cwd>" to session.started with that cwd
// and FindProcess: the session's process is in cwd, running when the
// journal was last written.
type findLines struct{ *Sessions }

func (h findLines) Line(path string, line []byte) {
	id, cwd, ok := strings.Cut(strings.TrimSpace(string(line)), " ")
	if !ok {
		h.BadLine(CodeInvalidRecord)
		return
	}
	if h.Event(id, "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: cwd}) {
		h.FindProcess(id, ProcQuery{Cwd: cwd, Wrote: path})
	}
}
func (h findLines) Truncated(string) {}
func (h findLines) Removed(string)   {}

// followFind runs findLines over dir with the fake tree until the test
// ends, and returns its hub.
func followFind(t *testing.T, dir string, tree *proctest.Tree) *sourcestest.Hub {
	t.Helper()
	h := sourcestest.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, hub.Start{Enabled: []string{"a"}, Publisher: h},
			FollowConfig{Tail: TailConfig{Roots: []string{dir}}, Linger: time.Hour, Agent: piAgent, Processes: tree},
			func(s *Sessions) Handler { return findLines{s} })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Follow = %v", err)
		}
	})
	return h
}

func snapIs(id string, f func(agentbridge.Snapshot) bool) func(*sourcestest.Hub) bool {
	return func(h *sourcestest.Hub) bool { s, ok := h.Shown(id); return ok && f(s) }
}

// TestFindProcessFollowsTheProcess: a session is bound to the agent's
// process in its cwd and ends when it ends; a resumed session (a new
// process in the same cwd writes it) is bound to the new one; two
// sessions of one cwd get their own processes; a session in a cwd where
// the agent does not run ends at once.
func TestFindProcessFollowsTheProcess(t *testing.T) {
	dir := t.TempDir()
	journal := filepath.Join(dir, "s.jsonl")
	tree := proctest.Fake(t)
	h := followFind(t, dir, tree)
	h.WaitFor(t, "the first reset", func(h *sourcestest.Hub) bool { return h.Resets() > 0 })

	tree.Add(proctest.Proc{PID: 100, PPID: 1, Exe: "/usr/bin/pi", Cwd: "/w", Started: time.Now().Add(-time.Minute)})
	sourcestest.Append(t, journal, "s1 /w\n")
	h.WaitFor(t, "bound to its process", snapIs("s1", func(s agentbridge.Snapshot) bool { return s.PID == 100 && s.Status == agentbridge.StatusIdle }))

	tree.Kill(100)
	h.WaitFor(t, "ended with its process", snapIs("s1", func(s agentbridge.Snapshot) bool { return s.Status == sourcestest.StatusExited }))

	// Resumed: a new process in the same cwd writes the session.
	tree.Add(proctest.Proc{PID: 101, PPID: 1, Exe: "/usr/bin/pi", Cwd: "/w", Started: time.Now().Add(-time.Second)})
	sourcestest.Append(t, journal, "s1 /w\n")
	h.WaitFor(t, "taken up by the new process", snapIs("s1", func(s agentbridge.Snapshot) bool { return s.PID == 101 && s.Status == agentbridge.StatusIdle }))

	// A second session in the same cwd, begun by a second process: its own.
	tree.Add(proctest.Proc{PID: 102, PPID: 1, Exe: "/usr/bin/pi", Cwd: "/w", Started: time.Now().Add(-time.Second)})
	sourcestest.Append(t, journal, "s2 /w\n")
	h.WaitFor(t, "the second session on the second process", snapIs("s2", func(s agentbridge.Snapshot) bool { return s.PID == 102 }))
	if s, _ := h.Snapshot("s1"); s.PID != 101 {
		t.Errorf("s1 moved to %d", s.PID)
	}

	tree.Kill(101)
	h.WaitFor(t, "s1 ended with its process", snapIs("s1", func(s agentbridge.Snapshot) bool { return s.Status == sourcestest.StatusExited }))
	if s, _ := h.Shown("s2"); s.PID != 102 || s.Status == sourcestest.StatusExited {
		t.Errorf("s2 %+v, want still on 102", s)
	}

	// A session whose cwd no process of the agent has: ended at once.
	sourcestest.Append(t, journal, "s3 /elsewhere\n")
	h.WaitFor(t, "a session with no process ended", snapIs("s3", func(s agentbridge.Snapshot) bool { return s.Status == sourcestest.StatusExited }))
}

// TestRestartTruth: a bridge that starts afresh (a new scan) shows a
// session whose process is gone as ended in its first reset, and a live
// one bound to the same pid; a pid that now names a process started after
// the journal's last write (reused) is not the agent's.
func TestRestartTruth(t *testing.T) {
	dir := t.TempDir()
	tree := proctest.Fake(t)
	old := time.Now().Add(-2 * time.Minute)
	write := func(name, line string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	write("live.jsonl", "live /live\n")
	write("gone.jsonl", "gone /gone\n")
	write("reused.jsonl", "reused /reused\n")
	tree.Add(proctest.Proc{PID: 200, PPID: 1, Exe: "/usr/bin/pi", Cwd: "/live", Started: old.Add(-time.Minute)})
	tree.Add(proctest.Proc{PID: 201, PPID: 1, Exe: "/usr/bin/pi", Cwd: "/reused", Started: time.Now()}) // after the last write
	for round := range 2 {                                                                              // the bridge, then the bridge restarted
		h := sourcestest.New()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- Follow(ctx, hub.Start{Enabled: []string{"a"}, Publisher: h},
				FollowConfig{Tail: TailConfig{Roots: []string{dir}}, Agent: piAgent, Processes: tree},
				func(s *Sessions) Handler { return findLines{s} })
		}()
		h.WaitFor(t, "the first reset", func(h *sourcestest.Hub) bool { return h.Resets() > 0 })
		calls := h.Calls()
		if calls[0].Op != agentbridge.OpReset {
			t.Fatalf("round %d: first call %+v", round, calls[0])
		}
		for _, c := range calls[1:] {
			t.Errorf("round %d: after the reset: %+v (the reset was not the truth)", round, c)
		}
		if s, _ := h.Snapshot("live"); s.PID != 200 || s.Status != agentbridge.StatusIdle {
			t.Errorf("round %d: live %+v, want idle with pid 200", round, s)
		}
		for _, id := range []string{"gone", "reused"} {
			if s, ok := h.Shown(id); !ok || s.Status != sourcestest.StatusExited || s.PID != 0 {
				t.Errorf("round %d: %s %+v, want ended, no pid", round, id, s)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestProcPassShared: queries answered one after the other, each about a
// write made before the last pass, share that pass; a write after it
// makes a new one.
func TestProcPassShared(t *testing.T) {
	tree := proctest.Fake(t)
	tree.Add(proctest.Proc{PID: 300, PPID: 1, Exe: "/usr/bin/pi", Cwd: "/x", Started: time.Now().Add(-time.Hour)})
	before := time.Now().Add(-time.Minute)
	passes.mu.Lock()
	n := passes.count
	passes.mu.Unlock()
	for range 3 {
		if l, ok := procPass(tree.Root(), before, time.Now); !ok || len(l) != 1 {
			t.Fatalf("procPass = %v, %v", l, ok)
		}
	}
	passes.mu.Lock()
	shared := passes.count - n
	passes.mu.Unlock()
	if shared != 1 {
		t.Errorf("%d passes for three queries about one earlier write, want 1", shared)
	}
	if _, ok := procPass(tree.Root(), time.Now().Add(time.Second), time.Now); !ok {
		t.Fatal("no pass")
	}
	passes.mu.Lock()
	made := passes.count - n
	passes.mu.Unlock()
	if made != 2 {
		t.Errorf("a write after the last pass did not make a new one")
	}
	if _, ok := procPass(filepath.Join(tree.Root(), "nothing"), time.Time{}, time.Now); ok {
		t.Error("a directory that is no proc file system gave a pass")
	}
}

// TestHolderForkOfWriter: the process writing a journal is found even
// while a child it forked, not yet exec'd, holds the journal too (Codex
// forks git and its tools from the process holding the rollout): the
// child is no second writer. Two real writers still tell nothing.
func TestHolderForkOfWriter(t *testing.T) {
	t.Parallel()
	j := filepath.Join(t.TempDir(), "rollout-1.jsonl")
	if err := os.WriteFile(j, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const exe = "/opt/codex/bin/codex"
	at := time.Now().Add(-time.Minute)
	for _, live := range []bool{false, true} {
		tree := proctest.Fake(t)
		ss := &Sessions{procs: tree, live: live, agent: proc.Agent{Names: []string{"codex"}}, log: slog.New(slog.DiscardHandler)}
		tree.Add(proctest.Proc{PID: 100, PPID: 1, Exe: exe, Cwd: "/w", Started: at, Writes: []string{j}})
		if got := ss.Holder(j); got != 100 {
			t.Fatalf("live %v: one writer: Holder = %d, want 100", live, got)
		}
		ss.held = nil // a new pass
		tree.Add(proctest.Proc{PID: 101, PPID: 100, Exe: exe, Cwd: "/w", Started: at.Add(time.Second), Threads: 1, Writes: []string{j}})
		if got := ss.Holder(j); got != 100 {
			t.Errorf("live %v: the writer and its fork before exec: Holder = %d, want 100", live, got)
		}
		ss.held = nil
		tree.Add(proctest.Proc{PID: 102, PPID: 1, Exe: exe, Cwd: "/w", Started: at.Add(2 * time.Second), Writes: []string{j}})
		if got := ss.Holder(j); got != 0 {
			t.Errorf("live %v: two writers: Holder = %d, want 0 (no telling)", live, got)
		}
	}
}
