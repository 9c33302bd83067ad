package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The database's schema, one entry per version (PRAGMA user_version):
// migrations[v] takes a database from version v to v+1. A new version
// appends a step; a step is never edited once released.
//
// Times are epoch milliseconds (0: unknown); an ended_at NULL is a turn,
// wait or tool still open. Rows of a session point at it by sid; turns are
// numbered in the session (idx, from 0); waits, tools and usage name the
// turn they fell in (-1: none was open). waits.journal is 1 for a wait
// made from a journal's (or a push's or a remote's) event and 0 for a
// hook's: a Fresh fact replaces the journal's rows only (turns, tools,
// usage and journal waits).
var migrations = []string{
	`CREATE TABLE sessions (
		sid        INTEGER PRIMARY KEY,
		host       TEXT NOT NULL,
		source     TEXT NOT NULL,
		id         TEXT NOT NULL,
		harness    TEXT NOT NULL DEFAULT '',
		title      TEXT NOT NULL DEFAULT '',
		model      TEXT NOT NULL DEFAULT '',
		cwd        TEXT NOT NULL DEFAULT '',
		project    TEXT NOT NULL DEFAULT '',
		started_at INTEGER NOT NULL DEFAULT 0,
		last_at    INTEGER NOT NULL DEFAULT 0,
		ended      TEXT,
		UNIQUE (host, source, id)
	);
	CREATE INDEX sessions_last ON sessions (last_at);
	CREATE TABLE turns (
		sid        INTEGER NOT NULL,
		idx        INTEGER NOT NULL,
		turn_id    TEXT NOT NULL DEFAULT '',
		started_at INTEGER NOT NULL,
		ended_at   INTEGER,
		outcome    TEXT NOT NULL DEFAULT '',
		model      TEXT NOT NULL DEFAULT '',
		tools      INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (sid, idx)
	) WITHOUT ROWID;
	CREATE INDEX turns_started ON turns (started_at);
	CREATE TABLE waits (
		wid        INTEGER PRIMARY KEY,
		sid        INTEGER NOT NULL,
		turn       INTEGER NOT NULL,
		wait_id    TEXT NOT NULL DEFAULT '',
		state      TEXT NOT NULL DEFAULT '',
		reason     TEXT NOT NULL DEFAULT '',
		started_at INTEGER NOT NULL,
		ended_at   INTEGER,
		answered   TEXT NOT NULL DEFAULT '',
		journal    INTEGER NOT NULL
	);
	CREATE INDEX waits_sid ON waits (sid);
	CREATE INDEX waits_started ON waits (started_at);
	CREATE TABLE tools (
		tid        INTEGER PRIMARY KEY,
		sid        INTEGER NOT NULL,
		turn       INTEGER NOT NULL,
		tool_id    TEXT NOT NULL DEFAULT '',
		name       TEXT NOT NULL DEFAULT '',
		started_at INTEGER NOT NULL,
		ended_at   INTEGER,
		outcome    TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX tools_sid ON tools (sid);
	CREATE TABLE usage (
		sid         INTEGER NOT NULL,
		turn        INTEGER NOT NULL,
		at          INTEGER NOT NULL,
		model       TEXT NOT NULL DEFAULT '',
		input       INTEGER NOT NULL,
		output      INTEGER NOT NULL,
		cache_read  INTEGER NOT NULL,
		cache_write INTEGER NOT NULL
	);
	CREATE INDEX usage_sid ON usage (sid);
	CREATE INDEX usage_at ON usage (at);`,
}

// schemaVersion is the version this code writes.
var schemaVersion = len(migrations)

// tables are the history's tables, as the last version has them.
var tables = []string{"sessions", "turns", "waits", "tools", "usage"}

// ErrNewerSchema is returned (wrapped) by Open for a database written by a
// newer version of the bridge; it is left as it is.
var ErrNewerSchema = errors.New("the history database was written by a newer agentbridge")

// ErrForeign is returned (wrapped) by Open for a database that is not the
// history's (other tables, views or triggers where its tables belong).
var ErrForeign = errors.New("not an agentbridge history database")

// migrate checks the database's schema (version, objects) before it
// writes anything, then puts it in WAL mode and brings its schema to
// schemaVersion, each step in a transaction with its version.
func migrate(ctx context.Context, db *sql.DB) error {
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	switch {
	case v > schemaVersion:
		return fmt.Errorf("%w (schema version %d; this one knows %d)", ErrNewerSchema, v, schemaVersion)
	case v < 0:
		return fmt.Errorf("%w (schema version %d)", ErrForeign, v)
	}
	objects, err := schemaObjects(ctx, db)
	if err != nil {
		return err
	}
	if v == 0 && len(objects) > 0 {
		return fmt.Errorf("%w: it holds %s %q", ErrForeign, objects[0].typ, objects[0].name)
	}
	if v > 0 {
		if err := checkObjects(objects); err != nil {
			return err // checked before anything is written
		}
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("open the database: journal mode %q, not WAL", mode)
	}
	if v == 0 {
		// Pages freed by a prune return to the file system with
		// PRAGMA incremental_vacuum (never a VACUUM, which rewrites the
		// whole file); the mode must be set before the first table.
		if _, err := db.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
			return fmt.Errorf("set up the database: %w", err)
		}
	}
	for ; v < schemaVersion; v++ {
		if err := step(ctx, db, v); err != nil {
			return err
		}
	}
	if objects, err = schemaObjects(ctx, db); err != nil {
		return err
	}
	return checkObjects(objects)
}

// step runs migrations[v] and sets the version to v+1, in one transaction.
func step(ctx context.Context, db *sql.DB, v int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate the schema to version %d: %w", v+1, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: no-op
	if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
		return fmt.Errorf("migrate the schema to version %d: %w", v+1, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		return fmt.Errorf("migrate the schema to version %d: %w", v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate the schema to version %d: %w", v+1, err)
	}
	return nil
}

type schemaObject struct{ typ, name, table string }

// maxObjects bounds the schema read: the history has about a dozen.
const maxObjects = 64

func schemaObjects(ctx context.Context, db *sql.DB) ([]schemaObject, error) {
	rows, err := db.QueryContext(ctx, "SELECT type, name, tbl_name FROM sqlite_schema LIMIT ?", maxObjects+1)
	if err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	defer rows.Close()
	var out []schemaObject
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.typ, &o.name, &o.table); err != nil {
			return nil, fmt.Errorf("read the schema: %w", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	if len(out) > maxObjects {
		return nil, fmt.Errorf("%w: more than %d schema objects", ErrForeign, maxObjects)
	}
	return out, nil
}

// checkObjects checks that the schema holds the history's tables as
// tables, and no view or trigger (the history makes none).
func checkObjects(objects []schemaObject) error {
	have := map[string]string{}
	for _, o := range objects {
		switch o.typ {
		case "view", "trigger":
			return fmt.Errorf("%w: it holds a %s (%q)", ErrForeign, o.typ, o.name)
		case "table":
			have[o.name] = o.typ
		}
	}
	for _, t := range tables {
		if have[t] != "table" {
			return fmt.Errorf("%w: table %q is missing", ErrForeign, t)
		}
	}
	for name := range have {
		if !slices.Contains(tables, name) && !strings.HasPrefix(name, "sqlite_") {
			return fmt.Errorf("%w: it holds table %q", ErrForeign, name)
		}
	}
	return nil
}
