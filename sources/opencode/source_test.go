package opencode

import (
	"bufio"
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

const (
	tuiFixture = "testdata/cli/tui-permission-subagent.db"
	tuiLog     = "testdata/cli/tui-permission-subagent.log"
	tuiRoot    = "ses_dced71a35ffeWrDNpk6D75LPB4"
	tuiChild   = "ses_dced67b3affeW1FLKhsgQuZFY2"
	tuiPart    = "prt_23129138c001dT1jBYXHx8E6K6" // the bash call that asks for permission
)

// writer is a stand-in for opencode: a read-write connection in WAL mode.
type writer struct {
	t  *testing.T
	db *sql.DB
}

func openWriter(t *testing.T, path string) *writer {
	t.Helper()
	return openWriterOpts(t, path, "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
}

// openWriterOpts opens a writer with the given URI parameters.
func openWriterOpts(t *testing.T, path, params string) *writer {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?"+params)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return &writer{t, db}
}

func (w *writer) exec(q string, args ...any) {
	w.t.Helper()
	if _, err := w.db.Exec(q, args...); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

// schemaOf returns the CREATE statements of a fixture's tables, minus
// those named in drop.
func schemaOf(t *testing.T, fixture string, drop ...string) []string {
	t.Helper()
	rows := queryFixture(t, fixture, "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL")
	var out []string
	for rows.Next() {
		var name, q string
		if err := rows.Scan(&name, &q); err != nil {
			t.Fatal(err)
		}
		skip := false
		for _, d := range drop {
			skip = skip || d == name
		}
		if !skip {
			out = append(out, q)
		}
	}
	return out
}

// queryFixture runs q on a copy of a fixture database; the rows are
// closed when the test ends.
func queryFixture(t *testing.T, fixture, q string) *sql.Rows {
	t.Helper()
	d, err := sql.Open("sqlite", "file:"+copyDB(t, fixture)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	rows, err := d.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rows.Close() })
	return rows
}

// eventRow is one row of a fixture's event journal.
type eventRow struct {
	id, agg, typ, data string
	seq                int64
}

func fixtureEvents(t *testing.T, fixture string) []eventRow {
	t.Helper()
	rows := queryFixture(t, fixture, "SELECT id, aggregate_id, seq, type, data FROM event ORDER BY rowid")
	var out []eventRow
	for rows.Next() {
		var e eventRow
		if err := rows.Scan(&e.id, &e.agg, &e.seq, &e.typ, &e.data); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func (w *writer) event(e eventRow) {
	w.exec("INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?, ?, ?, ?, ?)", e.id, e.agg, e.seq, e.typ, e.data)
}

// run starts the source on home and returns its hub, after its first reset.
func run(t *testing.T, home string) *sourcestest.Hub {
	t.Helper()
	return sourcestest.Start(t, New(sources.Options{Home: home, Processes: running(t)}), nil)
}

// running is a fake /proc with an opencode process in each directory of
// the tests' sessions: they are followed as they run.
func running(t *testing.T) *proctest.Tree {
	return proctest.Running(t, "/usr/bin/opencode", "/srv/app", "/tmp/ocw/home/proj", "/tmp/repo")
}

// toolOpen reports whether the hub got tool.started for id and no
// tool.finished yet.
func toolOpen(h *sourcestest.Hub, id string) bool {
	open := false
	for _, c := range h.Calls() {
		if c.Event.ToolID == id {
			open = c.Event.Kind == agentbridge.KindToolStarted
		}
	}
	return open
}

func status(id string, want agentbridge.Status) func(*sourcestest.Hub) bool {
	return func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(id)
		return ok && s.Status == want
	}
}

// settle waits until the source stops working, then reports whether a
// quiet second passes without a query, a wake-up or a read.
func quiet(t *testing.T) {
	t.Helper()
	// The trailing reads of the last change run first (see trailDelays).
	var trail time.Duration
	for _, d := range trailDelays {
		trail += d
	}
	time.Sleep(trail + 100*time.Millisecond)
	before, q := sources.ReadActivity(), queries.Load()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		n, nq := sources.ReadActivity(), queries.Load()
		if n == before && nq == q {
			break
		}
		before, q = n, nq
	}
	time.Sleep(time.Second)
	if after, aq := sources.ReadActivity(), queries.Load(); after != before || aq != q {
		t.Errorf("while the database did not change: %d queries, %d wake-ups, %d reads, %d timers; want none",
			aq-q, after.Wakes-before.Wakes, after.Reads-before.Reads, after.Timers-before.Timers)
	}
}

// TestLive replays, row by row into a database the source is following,
// the event journal the real CLI wrote in a TUI session (a bash call
// asking for permission, then a task call starting a subagent), with the
// log's lines appended when opencode wrote them, and checks what a user
// sees at each step; then that the idle source makes no query.
func TestLive(t *testing.T) {
	home := t.TempDir()
	// The database with its schema, before the source starts: the writer
	// here fills only the event journal, which the source follows from the
	// end it finds when it opens the database (opencode writes the tables
	// too, which the opening reads; TestRealCLI has the database appear
	// while the source runs).
	w := openWriter(t, filepath.Join(home, "opencode.db"))
	for _, q := range schemaOf(t, tuiFixture) {
		w.exec(q)
	}
	h := run(t, home)
	if err := os.MkdirAll(filepath.Join(home, "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(filepath.Join(home, "log", "opencode.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	logLines := func(upto string) {
		data, err := os.ReadFile(tuiLog)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), upto) {
				break
			}
		}
		if _, err := logf.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
	}

	evs := fixtureEvents(t, tuiFixture)
	next := 0
	until := func(cond func(e eventRow) bool) {
		for next < len(evs) {
			e := evs[next]
			w.event(e)
			next++
			if cond(e) {
				return
			}
		}
	}
	running := func(e eventRow) bool {
		return e.typ == "message.part.updated.1" && strings.Contains(e.data, tuiPart) && strings.Contains(e.data, `"status":"running"`)
	}
	until(running)
	h.WaitFor(t, "running with the bash tool, the cwd and the model", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(tuiRoot)
		return ok && s.Status == agentbridge.StatusRunning && s.Cwd == "/tmp/ocw/home/proj" && s.Model == "mock-model" && toolOpen(h, tuiPart)
	})

	logLines("message=asking")
	h.WaitFor(t, "waiting for the bash permission", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(tuiRoot)
		return ok && s.Status == agentbridge.StatusWaiting && s.WaitingFor == "bash: echo hi > marker.txt"
	})

	until(func(e eventRow) bool {
		return strings.Contains(e.data, `"finish":"stop"`) && strings.Contains(e.data, `"completed"`)
	})
	h.WaitFor(t, "the first turn done", status(tuiRoot, sourcestest.StatusDone))

	until(func(eventRow) bool { return false })
	logLines("\x00") // the rest
	h.WaitFor(t, "the subagent completed under its root, and the turn done", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(tuiRoot)
		return ok && s.Status == sourcestest.StatusDone && len(s.Subagents) == 1 &&
			s.Subagents[0].ID == tuiChild && s.Subagents[0].Status == agentbridge.SubagentCompleted
	})
	if _, ok := h.Shown(tuiChild); ok {
		t.Error("the subagent's session is listed as a root session")
	}
	if d := h.Diagnostics(); len(d) > 0 {
		t.Errorf("diagnostics: %+v", d)
	}
	quiet(t)
}
