package opencode

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// endless is a recursive query that never ends: n counts up without bound.
const endless = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM c)"

// hostileSchemas are databases anything running as the user could leave
// in opencode's home, built on the old schema (message, part, migration
// real): what the session table is instead, and what the source must say.
var hostileSchemas = []struct {
	name    string
	session []string // statements that make the session table (or what stands for it)
	code    string   // the diagnostic the source gives
	refused string   // SchemaError.Refused from OpenDB ("" for a read error)
}{
	{
		name:    "session view of endless rows",
		session: []string{"CREATE VIEW session AS " + endless + " SELECT 'ses_'||n AS id, NULL AS parent_id, '/srv/app' AS directory, 't' AS title, n AS time_created, 9000000000000000 AS time_updated FROM c"},
		code:    CodeRefused, refused: "view",
	},
	{
		name:    "session view of 400 MB titles",
		session: []string{"CREATE VIEW session AS " + endless + " SELECT 'ses_'||n AS id, NULL AS parent_id, '/srv/app' AS directory, printf('%.*c', 400000000, 'x') AS title, n AS time_created, 9000000000000000 AS time_updated FROM c"},
		code:    CodeRefused, refused: "view",
	},
	{
		name:    "session view over an endless query returning nothing",
		session: []string{"CREATE VIEW session AS " + endless + " SELECT 'ses_'||n AS id, NULL AS parent_id, '/srv/app' AS directory, 't' AS title, n AS time_created, n AS time_updated FROM c WHERE n < 0"},
		code:    CodeRefused, refused: "view",
	},
	{
		name: "session table with a generated 400 MB title",
		session: []string{
			"CREATE TABLE session (id text PRIMARY KEY, parent_id text, directory text NOT NULL, title text GENERATED ALWAYS AS (printf('%.*c', 400000000, 'x')) VIRTUAL, time_created integer NOT NULL, time_updated integer NOT NULL)",
			"INSERT INTO session (id, directory, time_created, time_updated) VALUES ('ses_gen', '/srv/app', 1, 9000000000000000)",
		},
		code: CodeRefused, refused: "generated column",
	},
	{
		name: "a trigger",
		session: []string{
			oldSchema[0],
			"CREATE TABLE audit (n integer)",
			"CREATE TRIGGER t AFTER INSERT ON session BEGIN INSERT INTO audit VALUES (1); END",
		},
		code: CodeRefused, refused: "trigger",
	},
	{
		name: "session a virtual table",
		session: []string{
			"CREATE VIRTUAL TABLE session USING fts5(id, parent_id, directory, title, time_created, time_updated)",
		},
		code: CodeRefused, refused: "virtual table",
	},
	{
		name:    "a virtual table of another name",
		session: []string{oldSchema[0], "CREATE VIRTUAL TABLE search USING fts5(body)"},
		code:    CodeRefused, refused: "virtual table",
	},
}

// hostileDB writes one of hostileSchemas at p.
func hostileDB(t *testing.T, p string, session []string) {
	t.Helper()
	w := openWriterOpts(t, p, "_pragma=busy_timeout(5000)")
	for _, q := range oldSchema[1:] {
		w.exec(q)
	}
	for _, q := range session {
		w.exec(q)
	}
	w.db.Close()
}

// TestHostileDatabase: a database that would make a read endless, write
// temporary files without end or compute values of hundreds of MB is
// refused before any query of its tables (or stopped by the bounds of the
// read) with a typed diagnostic naming no path, and a real database beside
// it is still shown.
func TestHostileDatabase(t *testing.T) {
	for _, tc := range hostileSchemas {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			bad := filepath.Join(home, "opencode-evil.db")
			hostileDB(t, bad, tc.session)

			_, err := OpenDB(bad)
			if tc.refused != "" {
				var se *SchemaError
				if !errors.As(err, &se) || se.Refused != tc.refused {
					t.Fatalf("OpenDB = %v; want a SchemaError refusing a %s", err, tc.refused)
				}
			}

			good := filepath.Join(home, "opencode.db")
			w := openWriter(t, good)
			for _, q := range oldSchema {
				w.exec(q)
			}
			now := time.Now().UnixMilli()
			w.exec("INSERT INTO session (id, project_id, directory, title, time_created, time_updated) VALUES ('ses_real', 'p', '/srv/app', 'Real work', ?, ?)", now, now)

			h := run(t, home)
			h.WaitFor(t, "the "+tc.code+" diagnostic and the real session", func(h *sourcestest.Hub) bool {
				said := false
				for _, d := range h.Diagnostics() {
					said = said || d.Code == tc.code && !strings.Contains(d.Message, home)
				}
				s, ok := h.Snapshot("ses_real")
				return said && ok && s.Title == "Real work"
			})
			for _, id := range []string{"ses_1", "ses_gen"} {
				if _, ok := h.Snapshot(id); ok {
					t.Errorf("session %s of the hostile database is shown", id)
				}
			}
		})
	}
}

// TestReadDeadline: a read that outlasts its deadline is interrupted and
// reported (CodeLimit); the other databases are read.
func TestReadDeadline(t *testing.T) {
	home := t.TempDir()
	slow := filepath.Join(home, "opencode-slow.db")
	w := openWriter(t, slow)
	for _, q := range oldSchema {
		w.exec(q)
	}
	// Sessions whose parents chain back far: the scan's ancestor query
	// works through all of them.
	now := time.Now().UnixMilli()
	w.exec("INSERT INTO session (id, project_id, parent_id, directory, title, time_created, time_updated) "+endless+
		" SELECT 'ses_'||n, 'p', 'ses_'||(n+1), '/srv/app', 't', ?1, ?1 FROM c LIMIT 20000", now)
	d, err := OpenDB(slow)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	old := readDeadline
	readDeadline = time.Nanosecond
	t.Cleanup(func() { readDeadline = old })
	if _, err := d.Scan(t.Context(), 0); !errors.Is(err, ErrLimit) {
		t.Fatalf("Scan past its deadline = %v; want ErrLimit", err)
	}
	if _, err := OpenDB(slow); !errors.Is(err, ErrLimit) {
		t.Fatalf("OpenDB past its deadline = %v; want ErrLimit", err)
	}
}

// TestConnectionBounds: the source's connection keeps temporary tables
// and sorts in memory (no file on disk), within SQLite's heap cap, and
// refuses longer values.
func TestConnectionBounds(t *testing.T) {
	d, err := OpenDB(copyDB(t, tuiFixture))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for q, want := range map[string]int64{"PRAGMA temp_store": 2, "PRAGMA hard_heap_limit": heapLimit, "PRAGMA query_only": 1, "PRAGMA trusted_schema": 0} {
		var got int64
		if err := d.db.QueryRowContext(t.Context(), q).Scan(&got); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", q, got, err, want)
		}
	}
	var n int
	err = d.db.QueryRowContext(t.Context(), "SELECT length(printf('%.*c', ?, 'x'))", maxValue+1).Scan(&n)
	if !errors.Is(classify(t.Context(), err), ErrLimit) {
		t.Errorf("a value over maxValue: %d, %v; want ErrLimit", n, err)
	}
}

// TestJournalBacklogInPages: a read of the event journal holds at most
// maxPages queries of rows; More says the rest waits for the next read,
// which takes it up where the first stopped.
func TestJournalBacklogInPages(t *testing.T) {
	old := readDeadline
	readDeadline = time.Minute // the race detector slows SQLite down many times
	t.Cleanup(func() { readDeadline = old })
	p := copyDB(t, tuiFixture)
	w := openWriter(t, p)
	d := scanned(t, p)
	total := maxPages*maxRows + 500
	w.exec("INSERT INTO event (id, aggregate_id, seq, type, data) "+endless+
		" SELECT 'evt_bl'||n, 'ses_bl', 1000+n, 'message.updated.1', '{\"info\":{\"id\":\"msg_'||n||'\",\"sessionID\":\"ses_bl\",\"role\":\"user\"}}' FROM c LIMIT ?", total)
	first, err := d.Changes(t.Context())
	if err != nil || len(first) != maxPages*maxRows || !d.More() {
		t.Fatalf("first read: %d records, more %v, %v; want %d and more", len(first), d.More(), err, maxPages*maxRows)
	}
	rest, err := d.Changes(t.Context())
	if err != nil || len(rest) != 500 || d.More() {
		t.Fatalf("second read: %d records, more %v, %v; want 500 and no more", len(rest), d.More(), err)
	}
	if a, b := first[len(first)-1].Message.ID, rest[0].Message.ID; a != fmt.Sprint("msg_", maxPages*maxRows) || b != fmt.Sprint("msg_", maxPages*maxRows+1) {
		t.Errorf("the second read starts at %s after %s", b, a)
	}
}

// scanned opens the database at p and scans it whole; it is closed when
// the test ends.
func scanned(t *testing.T, p string) *DB {
	t.Helper()
	d, err := OpenDB(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.Scan(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	return d
}
