package opencode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// oldSchema is a database from before the event journal (and before
// session.agent): the source reads its tables by time_updated.
var oldSchema = []string{
	"CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL DEFAULT '', directory text NOT NULL, title text NOT NULL, version text NOT NULL DEFAULT '', time_created integer NOT NULL, time_updated integer NOT NULL)",
	"CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL)",
	"CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL)",
	"CREATE TABLE migration (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL)",
	"INSERT INTO migration VALUES ('20260127222353_familiar_lady_ursula', 1)",
}

// TestOldSchema follows a hand-made database without the event table,
// written while the source runs: a turn with a running tool, then the
// tool and the turn ending, and a subagent session.
func TestOldSchema(t *testing.T) {
	home := t.TempDir()
	w := openWriter(t, filepath.Join(home, "opencode.db"))
	for _, q := range oldSchema {
		w.exec(q)
	}
	now := time.Now().UnixMilli()
	w.exec("INSERT INTO session (id, project_id, directory, title, time_created, time_updated) VALUES ('ses_old1', 'p', '/srv/app', 'Fix the build', ?, ?)", now, now)
	w.exec(`INSERT INTO message VALUES ('msg_001', 'ses_old1', ?, ?, '{"role":"user","time":{"created":1}}')`, now, now)
	w.exec(`INSERT INTO message VALUES ('msg_002', 'ses_old1', ?, ?, '{"role":"assistant","modelID":"claude-sonnet-4","time":{"created":2}}')`, now, now)
	w.exec(`INSERT INTO part VALUES ('prt_001', 'msg_002', 'ses_old1', ?, ?, '{"type":"tool","tool":"bash","state":{"status":"running"}}')`, now, now)
	w.exec(`INSERT INTO part VALUES ('prt_bad', 'msg_002', 'ses_old1', ?, ?, 'not json')`, now, now)

	h := run(t, home)
	h.WaitFor(t, "the session running, read at the start", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown("ses_old1")
		return ok && s.Status == agentbridge.StatusRunning && s.Model == "claude-sonnet-4" && s.Cwd == "/srv/app" && s.Title == "Fix the build"
	})

	later := now + 1000
	w.exec("INSERT INTO session (id, project_id, parent_id, directory, title, time_created, time_updated) VALUES ('ses_kid', 'p', 'ses_old1', '/srv/app', 'look around (@explore subagent)', ?, ?)", later, later)
	h.WaitFor(t, "the subagent under its root", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown("ses_old1")
		return ok && len(s.Subagents) == 1 && s.Subagents[0].ID == "ses_kid" && s.Subagents[0].Status == agentbridge.SubagentRunning
	})
	w.exec(`UPDATE part SET time_updated = ?, data = '{"type":"tool","tool":"bash","state":{"status":"completed"}}' WHERE id = 'prt_001'`, later+1)
	w.exec(`UPDATE message SET time_updated = ?, data = '{"role":"assistant","modelID":"claude-sonnet-4","finish":"stop","time":{"created":2,"completed":5}}' WHERE id = 'msg_002'`, later+2)
	h.WaitFor(t, "the turn done", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown("ses_old1")
		return ok && s.Status == sourcestest.StatusDone && s.LastTurn == agentbridge.LastTurnCompleted
	})
	if _, ok := h.Shown("ses_kid"); ok {
		t.Error("the subagent is listed as a root session")
	}
	quiet(t)
}

// TestSchemaDrift: a database whose tables lack a column the source reads
// is refused with a typed diagnostic, never read into a wrong status; a
// journal event of an unknown version is skipped and counted.
func TestSchemaDrift(t *testing.T) {
	t.Run("missing column", func(t *testing.T) {
		home := t.TempDir()
		w := openWriter(t, filepath.Join(home, "opencode.db"))
		for _, q := range oldSchema {
			w.exec(strings.Replace(q, ", data text NOT NULL)", ", payload text NOT NULL)", 1))
		}
		p := filepath.Join(home, "opencode.db")
		_, err := OpenDB(p)
		var se *SchemaError
		if !errors.As(err, &se) || se.Table != "message" || se.Column != "data" {
			t.Fatalf("OpenDB = %v; want a SchemaError for message.data", err)
		}
		h := run(t, home)
		h.WaitFor(t, "the schema diagnostic", func(h *sourcestest.Hub) bool {
			for _, d := range h.Diagnostics() {
				if d.Code == CodeSchema && !strings.Contains(d.Message, home) {
					return true
				}
			}
			return false
		})
	})
	t.Run("event of another version", func(t *testing.T) {
		p := copyDB(t, tuiFixture)
		w := openWriter(t, p)
		d := scanned(t, p)
		w.exec(`INSERT INTO event (id, aggregate_id, seq, type, data) VALUES ('evt_x', 'ses_x', 99, 'message.part.updated.2', '{"part":{"id":"prt_x","state":{"status":"running"}}}')`)
		recs, err := d.Changes(context.Background())
		if err != nil || len(recs) != 0 {
			t.Fatalf("Changes = %d records, %v; want none", len(recs), err)
		}
		if got := d.Drift(); got["message.part.updated"] != 1 {
			t.Errorf("Drift = %v; want one message.part.updated", got)
		}
	})
	t.Run("unknown tool status", func(t *testing.T) {
		m := NewMapper(nil)
		m.Apply(Record{Session: &SessionInfo{ID: "ses_a"}})
		if out := m.Apply(Record{Part: &PartInfo{ID: "prt_a", SessionID: "ses_a", Type: "tool", Tool: "bash", Status: "paused"}}); len(out) != 0 {
			t.Errorf("an unknown status mapped to %+v", out)
		}
		if m.Skipped[CodeUnknownStatus] != 1 {
			t.Errorf("Skipped = %v", m.Skipped)
		}
	})
}

// TestUnreadable: files that are not databases are reported, not read.
func TestUnreadable(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"garbage": strings.Repeat("this is not a database at all, just text\n", 4)} {
		p := filepath.Join(dir, name+".db")
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := OpenDB(p)
		if err == nil {
			_, err = d.Scan(context.Background(), 0)
			d.Close()
		}
		var se *SchemaError
		if err == nil || !(errors.Is(err, ErrUnreadable) || errors.As(err, &se)) {
			t.Errorf("%s: err = %v; want ErrUnreadable or a SchemaError", name, err)
		}
	}
	// Shorter than a header: a database being created, not opened.
	for name, data := range map[string]string{"empty": "", "short": "SQLite format 3\x00"} {
		p := filepath.Join(dir, name+".db")
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if d, err := OpenDB(p); !errors.Is(err, ErrNotReady) {
			if d != nil {
				d.Close()
			}
			t.Errorf("%s: err = %v; want ErrNotReady", name, err)
		}
	}
}

// FuzzDB feeds corrupt databases (a real one with bytes changed) to the
// reader: it must return an error or records, never panic or hang.
func FuzzDB(f *testing.F) {
	seed, err := os.ReadFile(tuiFixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(0), byte(0), uint16(0))
	f.Add(uint32(100), byte(0xff), uint16(16))
	f.Add(uint32(4096), byte(0x0d), uint16(4096))
	f.Add(uint32(28), byte(0x7f), uint16(4))
	f.Fuzz(func(t *testing.T, at uint32, b byte, n uint16) {
		data := append([]byte(nil), seed...)
		for i := 0; i < int(n) && int(at)+i < len(data); i++ {
			data[int(at)+i] ^= b | 1
		}
		p := filepath.Join(t.TempDir(), "opencode.db")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := OpenDB(p)
		if err != nil {
			return
		}
		defer d.Close()
		m := NewMapper(nil)
		if recs, err := d.Scan(context.Background(), 0); err == nil {
			for _, r := range recs {
				m.Apply(r)
			}
		}
		d.last = 0
		if recs, err := d.Changes(context.Background()); err == nil {
			for _, r := range recs {
				m.Apply(r)
			}
		}
	})
}

// FuzzLog feeds log lines to the parser.
func FuzzLog(f *testing.F) {
	f.Add([]byte(`timestamp=2026-12-01T10:31:47.026Z level=INFO run=3298db43 message=asking id=per_231291a52001rP57OEcDg3iIFz permission=bash patterns="[\"echo hi > marker.txt\"]"`))
	f.Add([]byte(`timestamp=x run=r message=loop session.id=ses_1 step=0`))
	f.Add([]byte(`a="unterminated \" b=`))
	f.Fuzz(func(t *testing.T, line []byte) {
		l, ok := ParseLog(line)
		if ok && l.Ask == nil && l.Session == "" {
			t.Fatal("ok without a session or a request")
		}
		if l.Ask != nil {
			_ = askReason(*l.Ask)
		}
	})
}

// TestDatabaseBeingCreated is the order in which opencode makes its
// database: the file is created empty, then its first page (which puts it
// in WAL mode) is written in a rollback-journal transaction whose write
// lock is taken without waiting, so that a reader holding a shared lock
// at that moment makes opencode fail to start ("database is locked"; the
// real CLI's TestRealCLIRejected failed so under load). The source, woken
// by the empty file, runs no query on it; the writer, which does not wait
// for locks either, switches the database to WAL and fills it; the
// source then reads it.
func TestDatabaseBeingCreated(t *testing.T) {
	home := t.TempDir()
	h := run(t, home)
	p := filepath.Join(home, "opencode.db")
	q := queries.Load()
	for range 3 { // created, then opened and touched: each a change
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chtimes(p, time.Now(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// The wake-up and its trailing reads (an absence can only be waited out).
	var trail time.Duration
	for _, d := range trailDelays {
		trail += d
	}
	time.Sleep(trail + 200*time.Millisecond)
	if n := queries.Load() - q; n != 0 {
		t.Fatalf("%d queries on a database file without a header; want none (a reader's lock makes opencode's first write fail)", n)
	}
	// As opencode 1.18 opens its database: journal_mode=WAL is its first
	// write, made with no busy timeout (the one a reader's lock would
	// fail), then busy_timeout=5000 before its migrations, which from here
	// on may meet the source's reads (the header exists now).
	w := openWriterOpts(t, p, "_pragma=busy_timeout(0)")
	w.exec("PRAGMA journal_mode=WAL")
	w.exec("PRAGMA busy_timeout=5000")
	for _, x := range oldSchema {
		w.exec(x)
	}
	now := time.Now().UnixMilli()
	w.exec("INSERT INTO session (id, project_id, directory, title, time_created, time_updated) VALUES ('ses_new1', 'p', '/srv/app', 'Made now', ?, ?)", now, now)
	h.WaitFor(t, "the new database's session", func(h *sourcestest.Hub) bool {
		_, ok := h.Shown("ses_new1")
		return ok
	})
}

// TestHomeAppears: the data directory does not exist when the source
// starts (opencode never ran); opencode makes it, several levels deep at
// once, and writes its database: the sessions show.
func TestHomeAppears(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, ".local", "share", "opencode")
	h := sourcestest.Start(t, New(sources.Options{Home: home, Window: -1}), nil)
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tuiFixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "opencode.db"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the database's session", func(h *sourcestest.Hub) bool {
		_, ok := h.Shown(tuiRoot)
		return ok
	})
}
