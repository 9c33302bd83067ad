package opencode

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentbridge/agentbridge/proc"
)

// Errors of a database read.
var (
	// ErrBusy: the database was locked (a checkpoint or recovery in
	// progress); the read is tried again on the next change of the files.
	ErrBusy = errors.New("opencode database busy")
	// ErrUnreadable: not a database, corrupt, or not a regular file.
	ErrUnreadable = errors.New("opencode database unreadable")
	// ErrNotReady: the file is shorter than a database header: a database
	// being created. It is not opened (see OpenDB) and is read again on
	// its next change.
	ErrNotReady = errors.New("opencode database being created")
	// ErrLimit: a read went past the bounds the source reads within (its
	// deadline, SQLite's memory cap, or a value longer than maxValue); the
	// database is read again on its next change.
	ErrLimit = errors.New("opencode database read past its bounds")
)

// Bounds of a database read: the database is untrusted input (anything
// that runs as the user can write one), so SQLite itself is held to them.
const (
	// maxValue is the longest string or blob SQLite makes or reads on the
	// source's connections (SQLITE_LIMIT_LENGTH): a real row's data (a
	// part with a pasted image) stays far below it; a value computed in
	// SQL to exhaust memory ends the query with SQLITE_TOOBIG.
	maxValue = 32 << 20
	// heapLimit is SQLite's hard heap limit (process-wide: the opencode
	// source is the process's only SQLite user); past it an allocation
	// fails with SQLITE_NOMEM instead of growing.
	heapLimit = 256 << 20
	// cacheKiB is each connection's page cache.
	cacheKiB = 2048
	// maxSchema bounds the schema entries looked at.
	maxSchema = 4096
)

// readDeadline bounds one read (opening with its schema check, a scan, a
// read of changes): a query still running then is interrupted (SQLite's
// progress handler, through the context) and the read fails with
// ErrLimit. A variable so that tests can shorten it.
var readDeadline = 10 * time.Second

// headerSize is the length of SQLite's file header.
const headerSize = 100

// maxRows bounds the rows one query returns; a larger backlog is read in
// several queries within the same wake.
const maxRows = 2000

// maxPages bounds the queries of maxRows one read of the event journal
// runs (and so the records it holds); the rest waits for the next read
// (More).
const maxPages = 4

var queries atomic.Uint64 // every query run against a database: the idle test's witness

// DB is one opencode database followed read-only: opened with mode=ro
// (never a write, never a checkpoint), a short busy timeout, and the
// position of what was read so far: the event journal's last rowid, or,
// for a database without the event table, the latest time_updated seen.
type DB struct {
	path     string
	pool     *sql.DB
	db       *sql.Conn // the one connection, with its limits set
	dev, ino uint64
	events   bool   // has the event table: follow it by rowid
	agent    bool   // session.agent exists
	Version  string // the latest migration applied ("" unknown)
	last     int64  // event: the last rowid read
	mark     int64  // tables: the latest time_updated read
	atMark   map[string]int64
	drift    map[string]int // unknown event versions by type family
	more     bool           // the last read of the journal stopped at maxPages
	cookie   int64          // the schema version (SQLite's schema cookie) the schema was checked at
}

// More reports whether the last Changes left journal rows to read: the
// caller reads again (soon, not on a timer).
func (d *DB) More() bool { return d.more }

// OpenDB opens the database at path read-only and checks its schema. It
// never creates, writes or checkpoints the database, and never writes a
// temporary file (temp_store MEMORY; SQLite's memory is capped, see
// heapLimit). The schema is checked before any other query: the tables
// the source reads must be tables (not views) without virtual generated
// columns, and the database holds no trigger and no virtual table
// (opencode makes neither); else a *SchemaError with Refused set.
//
// A file shorter than a database header is not opened (ErrNotReady):
// opencode creates its database empty, then writes its first page, which
// switches it to WAL mode, in a rollback-journal transaction that takes
// the file's write lock without waiting. A reader's shared lock held at
// that moment (even a schema query's) makes opencode fail to start with
// "database is locked". Once the header is written the database is in WAL
// mode, where readers never block the writer.
func OpenDB(path string) (*DB, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", ErrUnreadable)
	}
	if fi.Size() < headerSize {
		return nil, ErrNotReady
	}
	if err := sideFiles(path); err != nil {
		return nil, err
	}
	key, _ := proc.KeyOf(fi)
	u := url.URL{Scheme: "file", Path: path, RawQuery: dsnParams}
	pool, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("open opencode database: %w", err)
	}
	pool.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), readDeadline)
	defer cancel()
	conn, err := pool.Conn(ctx)
	if err == nil {
		_, err = sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, maxValue)
		if err != nil {
			conn.Close()
		}
	}
	if err != nil {
		pool.Close()
		return nil, classify(ctx, err)
	}
	d := &DB{path: path, pool: pool, db: conn, atMark: map[string]int64{}, drift: map[string]int{}, dev: key.Dev, ino: key.Ino}
	if err := d.checkSchema(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// checkSchema runs the schema check when the schema changed since it last
// ran (its version, SQLite's schema cookie, moved: the file was changed in
// place, by a migration or by anything else that writes it).
func (d *DB) checkSchema(ctx context.Context) error {
	queries.Add(1)
	var v int64
	if err := d.db.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&v); err != nil {
		return classify(ctx, err)
	}
	if d.cookie == v && v != 0 {
		return nil
	}
	if err := d.schema(ctx); err != nil {
		return err
	}
	d.cookie = v
	return nil
}

// begin starts a read transaction on the schema as it was checked: the
// check runs again first when the schema changed since, and a change
// between that check and the transaction's start makes the read fail as
// busy (it is read again on the next change), so that no read ever runs
// on a schema that was not checked.
func (d *DB) begin(ctx context.Context) (*sql.Tx, error) {
	if err := d.checkSchema(ctx); err != nil {
		return nil, err
	}
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	queries.Add(1)
	var v int64
	if err := tx.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&v); err != nil {
		tx.Rollback() //nolint:errcheck // read-only
		return nil, err
	}
	if v != d.cookie {
		tx.Rollback() //nolint:errcheck // read-only
		return nil, fmt.Errorf("%w: the schema changed while it was checked", ErrBusy)
	}
	return tx, nil
}

// dsnParams open a database read-only (no write, no checkpoint), with a
// short busy timeout, no temporary file on disk, a small page cache, no
// SQL functions run from the schema that are not innocuous, and SQLite's
// heap capped.
var dsnParams = fmt.Sprintf("mode=ro&_pragma=busy_timeout(50)&_pragma=query_only(1)&_pragma=temp_store(2)"+
	"&_pragma=cache_size(-%d)&_pragma=trusted_schema(0)&_pragma=hard_heap_limit(%d)&_pragma=soft_heap_limit(%d)",
	cacheKiB, heapLimit, heapLimit/2)

// sideSuffixes name the files SQLite opens beside a database: its
// rollback journal (looked for at the start of every read: a hot journal
// is rolled back), its write-ahead log and the log's index.
var sideSuffixes = []string{"-journal", "-wal", "-shm"}

// sideFiles refuses a database beside which a side file is not a regular
// file (a FIFO, a device, a socket, a symlink, a directory): SQLite opens
// them by name without O_NONBLOCK, and opening a FIFO named like the
// journal would block the source for good, beyond any deadline. It is
// checked before every read; opencode makes only regular side files.
func sideFiles(path string) error {
	for _, s := range sideSuffixes {
		fi, err := os.Lstat(path + s)
		if err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: its %s file is not a regular file", ErrUnreadable, strings.TrimPrefix(s, "-"))
		}
	}
	return nil
}

// Close releases the connection.
func (d *DB) Close() error {
	d.db.Close()
	return d.pool.Close()
}

// Same reports whether path is still the file that was opened.
func (d *DB) Same() bool {
	fi, err := os.Stat(d.path)
	if err != nil {
		return false
	}
	k, ok := proc.KeyOf(fi)
	return ok && k.Dev == d.dev && k.Ino == d.ino
}

// classify maps a read's error to ErrBusy, ErrLimit or ErrUnreadable; ctx
// is the read's own context (its deadline passed: ErrLimit).
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var sch *SchemaError
	if errors.As(err, &sch) {
		return err
	}
	if ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)) {
		return fmt.Errorf("%w: deadline: %v", ErrLimit, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_FULL:
			return fmt.Errorf("%w: %v", ErrLimit, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: %v", ErrBusy, err)
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FORMAT, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_ERROR:
			return fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
	}
	return fmt.Errorf("%w: %v", ErrUnreadable, err)
}

// Events reports whether the database has the event journal.
func (d *DB) Events() bool { return d.events }
