package history

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testenv"
)

// TestOpenHostile: whatever sits at the database's path, Open answers at
// once with an error that says what is wrong, and changes nothing.
func TestOpenHostile(t *testing.T) {
	t.Parallel()
	sqlite := func(t *testing.T, p string, stmts ...string) {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+p)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, s := range stmts {
			if _, err := db.Exec(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		make func(t *testing.T, p string)
		want string
		is   error
	}{
		{"FIFO", func(t *testing.T, p string) { testenv.FIFO(t, p) }, "FIFO", nil},
		{"FIFO as its WAL", func(t *testing.T, p string) { testenv.FIFO(t, p+"-wal") }, "FIFO", nil},
		{"directory", func(t *testing.T, p string) { mkdir(t, p) }, "a directory", nil},
		{"symlink", func(t *testing.T, p string) {
			sqlite(t, p+".real", "CREATE TABLE x (a)")
			if err := os.Symlink(p+".real", p); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link", nil},
		{"symlink to a FIFO", func(t *testing.T, p string) {
			testenv.FIFO(t, p+".fifo")
			if err := os.Symlink(p+".fifo", p); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link", nil},
		{"garbage", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte(strings.Repeat("not a database\n", 500)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a database", nil},
		{"foreign schema", func(t *testing.T, p string) { sqlite(t, p, "CREATE TABLE notes (body TEXT)") }, "notes", ErrForeign},
		{"a view for a table", func(t *testing.T, p string) {
			sqlite(t, p, append(strings.Split(migrations[0], ";"), "PRAGMA user_version = 1",
				"ALTER TABLE turns RENAME TO turns_x", "CREATE VIEW turns AS SELECT * FROM turns_x")...)
		}, "view", ErrForeign},
		{"a trigger", func(t *testing.T, p string) {
			sqlite(t, p, append(strings.Split(migrations[0], ";"), "PRAGMA user_version = 1",
				"CREATE TRIGGER t AFTER INSERT ON turns BEGIN DELETE FROM sessions; END")...)
		}, "trigger", ErrForeign},
		{"newer schema", func(t *testing.T, p string) {
			sqlite(t, p, append(strings.Split(migrations[0], ";"), "PRAGMA user_version = 99")...)
		}, "newer", ErrNewerSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "h.db")
			tc.make(t, p)
			before := snapshot(t, p)
			done := make(chan error, 1)
			go func() {
				s, err := Open(p, Options{})
				if err == nil {
					s.Close()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				testenv.Release(p)
				testenv.Release(p + "-wal")
				t.Fatal("Open hangs")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want an error saying %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Open = %v, want it to wrap %v", err, tc.is)
			}
			if after := snapshot(t, p); after != before {
				t.Errorf("Open changed the file: %q → %q", before, after)
			}
		})
	}
}

// TestOpenCreates: a new database is 0600 in a 0700 directory, and opens
// again (the schema is kept, its version is the current one).
func TestOpenCreates(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state", "sub")
	p := filepath.Join(dir, "history.db")
	for range 2 {
		s, err := Open(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var v int
		if err := s.rdb.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
			t.Errorf("user_version = %d, %v; want %d", v, err, schemaVersion)
		}
		var mode string
		if err := s.rdb.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("journal_mode = %q, %v; want wal", mode, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, p: 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(name), fi.Mode().Perm(), want)
		}
	}
}

// TestSyncWaitsForTheWriter: Sync returns with its context when no
// writer runs, and at once when one does.
func TestSyncWaitsForTheWriter(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Sync(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Sync without a writer = %v, want context.Canceled", err)
	}
}

func snapshot(t *testing.T, p string) string {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		return err.Error()
	}
	if !fi.Mode().IsRegular() {
		return fi.Mode().String()
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
}
