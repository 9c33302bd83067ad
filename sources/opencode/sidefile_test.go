package opencode

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// oneSession writes a database of the old schema at p holding session id
// with title, updated at now, and returns its writer.
func oneSession(t *testing.T, p, id, title string, now int64) *writer {
	t.Helper()
	w := openWriter(t, p)
	for _, q := range oldSchema {
		w.exec(q)
	}
	w.exec("INSERT INTO session (id, project_id, directory, title, time_created, time_updated) VALUES (?, 'p', '/srv/app', ?, ?, ?)", id, title, now, now)
	return w
}

// saidAndShown holds once the source gave a diagnostic of code naming no
// path of home (any code will do when code is "") and shows session
// ses_real with title.
func saidAndShown(home, code, title string) func(*sourcestest.Hub) bool {
	return func(h *sourcestest.Hub) bool {
		said := code == ""
		for _, d := range h.Diagnostics() {
			said = said || d.Code == code && !strings.Contains(d.Message, home)
		}
		s, ok := h.Snapshot("ses_real")
		return said && ok && s.Title == title
	}
}

// TestSideFilesNotRegular: a FIFO, a device, a directory or a symlink in
// place of a database's journal, write-ahead log or its index (named
// like SQLite's own, made by anything that writes into the home) is
// refused before SQLite opens it: the database is reported unreadable
// (no path) and a real database beside it is shown. Before, a FIFO named
// like the journal blocked the open for good and the whole opencode
// source with it. Each is tried on a database seen at the scan and on
// one already open (the file made after the first read, then a change).
func TestSideFilesNotRegular(t *testing.T) {
	kinds := map[string]func(p string) error{
		"fifo":              func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"directory":         func(p string) error { return os.Mkdir(p, 0o700) },
		"link to a fifo": func(p string) error {
			if err := syscall.Mkfifo(p+".fifo", 0o600); err != nil {
				return err
			}
			return os.Symlink(p+".fifo", p)
		},
	}
	for _, suffix := range sideSuffixes {
		for kind, make := range kinds {
			for _, when := range []string{"at the scan", "while open"} {
				t.Run(suffix+"/"+kind+"/"+when, func(t *testing.T) {
					home := t.TempDir()
					bad := filepath.Join(home, "opencode-evil.db")
					now := time.Now().UnixMilli()
					oneSession(t, bad, "ses_evil", "Evil", now).db.Close()
					plant := func() {
						os.Remove(bad + suffix)
						if err := make(bad + suffix); err != nil {
							t.Fatal(err)
						}
					}
					if when == "at the scan" {
						plant()
					}
					g := oneSession(t, filepath.Join(home, "opencode.db"), "ses_real", "Real work", now)

					h := run(t, home)
					if when == "while open" {
						h.WaitFor(t, "the session of the database before the attack", func(h *sourcestest.Hub) bool {
							_, ok := h.Snapshot("ses_evil")
							return ok
						})
						plant()
						// a change wakes the source: the database read again
						if err := os.Chtimes(bad, time.Now(), time.Now()); err != nil {
							t.Fatal(err)
						}
						f, err := os.OpenFile(bad, os.O_WRONLY|os.O_APPEND, 0)
						if err != nil {
							t.Fatal(err)
						}
						f.Close()
						g.exec("UPDATE session SET title = 'Later work', time_updated = ? WHERE id = 'ses_real'", now+1)
					}
					if when == "while open" {
						h.WaitFor(t, "the real session's update", saidAndShown(home, "", "Later work"))
					} else {
						h.WaitFor(t, "the unreadable diagnostic and the real session", saidAndShown(home, CodeUnreadable, "Real work"))
					}
				})
			}
		}
	}
}

// TestSchemaChangedWhileOpen: a database that passed the schema check at
// open and is then changed in place (same file: the session table
// dropped and a view over an endless query put in its place, a trigger
// or a virtual table added) is checked again before the next read and
// refused, instead of running what it now defines until the read's
// deadline on every change. A change of the schema opencode makes (a
// migration adding a column) is read on.
func TestSchemaChangedWhileOpen(t *testing.T) {
	old := readDeadline
	readDeadline = 10 * time.Minute // a hang bound: before, the view ran until it
	t.Cleanup(func() { readDeadline = old })
	for _, tc := range []struct {
		name    string
		change  []string
		refused string
	}{
		{"session now a view of an endless query", []string{"DROP TABLE session", hostileSchemas[2].session[0]}, "view"},
		{"a trigger added", []string{"CREATE TABLE audit (n integer)", "CREATE TRIGGER t AFTER INSERT ON session BEGIN INSERT INTO audit VALUES (1); END"}, "trigger"},
		{"a virtual table added", []string{"CREATE VIRTUAL TABLE search USING fts5(body)"}, "virtual table"},
		{"a migration adds a column", []string{"ALTER TABLE session ADD COLUMN share_url text"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "opencode.db")
			now := time.Now().UnixMilli()
			w := oneSession(t, p, "ses_1", "one", now)
			d := scanned(t, p)
			for _, q := range tc.change {
				w.exec(q)
			}
			if tc.refused == "" {
				w.exec("UPDATE session SET title = 'two', time_updated = ? WHERE id = 'ses_1'", now+1)
			}
			recs, err := d.Changes(t.Context())
			var se *SchemaError
			switch {
			case tc.refused != "" && (!errors.As(err, &se) || se.Refused != tc.refused):
				t.Fatalf("Changes after the change = %v; want a SchemaError refusing a %s", err, tc.refused)
			case tc.refused == "" && (err != nil || len(recs) == 0):
				t.Fatalf("Changes after a migration = %d records, %v", len(recs), err)
			}
		})
	}
}

// TestDatabaseReplacedWhileFollowed: a followed database replaced by
// another file (a database whose session table is a view, renamed over
// it; a FIFO; a link to /dev/zero; a directory) is read as the new file
// it is: refused or unreadable with a diagnostic naming no path, without
// blocking the source, and a real database beside it is still followed.
func TestDatabaseReplacedWhileFollowed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  string
		place func(t *testing.T, p string)
	}{
		{"a database with a view renamed over it", CodeRefused, func(t *testing.T, p string) {
			evil := p + ".new"
			hostileDB(t, evil, hostileSchemas[2].session)
			if err := os.Rename(evil, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"a fifo", CodeUnreadable, func(t *testing.T, p string) {
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a link to /dev/zero", CodeUnreadable, func(t *testing.T, p string) {
			os.Remove(p)
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory", CodeUnreadable, func(t *testing.T, p string) {
			os.Remove(p)
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			bad := filepath.Join(home, "opencode-evil.db")
			now := time.Now().UnixMilli()
			oneSession(t, bad, "ses_evil", "Evil", now).db.Close()
			for _, s := range sideSuffixes {
				os.Remove(bad + s)
			}
			g := oneSession(t, filepath.Join(home, "opencode.db"), "ses_real", "Real work", now)
			h := run(t, home)
			h.WaitFor(t, "the session of the database before", func(h *sourcestest.Hub) bool {
				_, ok := h.Snapshot("ses_evil")
				return ok
			})
			tc.place(t, bad)
			g.exec("UPDATE session SET title = 'Later work', time_updated = ? WHERE id = 'ses_real'", now+1)
			h.WaitFor(t, "the diagnostic and the real session's update", saidAndShown(home, tc.code, "Later work"))
		})
	}
}
