package opencode

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/validate"
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

// SchemaError says the database lacks a table or column the source reads
// (a schema it does not know, refused rather than misread), or (Refused
// set) holds what a read could run: a view or virtual table in place of a
// table the source reads, a virtual generated column in one, or a trigger.
type SchemaError struct {
	Table, Column string
	// Refused names what was refused: "view", "virtual table",
	// "generated column" or "trigger"; "" for a missing table or column.
	Refused string
}

func (e *SchemaError) Error() string {
	switch {
	case e.Refused != "" && e.Table == "" || e.Refused == "trigger":
		return "opencode database: it has a " + e.Refused
	case e.Refused != "" && e.Column != "":
		return fmt.Sprintf("opencode database: table %s has a %s", e.Table, e.Refused)
	case e.Refused != "":
		return fmt.Sprintf("opencode database: %s is a %s, not a table", e.Table, e.Refused)
	case e.Column == "":
		return "opencode database: no table " + e.Table
	}
	return fmt.Sprintf("opencode database: table %s has no column %s", e.Table, e.Column)
}

// required are the columns read from each table; the event table is
// optional (older databases have none), and so is session.agent.
var required = map[string][]string{
	"session": {"id", "parent_id", "directory", "title", "time_created", "time_updated"},
	"message": {"id", "session_id", "time_created", "time_updated", "data"},
	"part":    {"id", "message_id", "session_id", "time_created", "time_updated", "data"},
	"event":   {"aggregate_id", "type", "data"},
}

// maxRows bounds the rows one query returns; a larger backlog is read in
// several queries within the same wake.
const maxRows = 2000

// maxPages bounds the queries of maxRows one read of the event journal
// runs (and so the records it holds); the rest waits for the next read
// (More).
const maxPages = 4

// maxText bounds the prompt text taken from a part, maxErrorText a tool's
// error (only its start is compared).
const (
	maxText      = 4096
	maxErrorText = 256
)

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

// readTables are the tables the source queries: each must be a table
// when it exists.
var readTables = []string{"session", "message", "part", "event", "migration"}

// schema checks, before any other query, what a read could run (views of
// the tables read, virtual generated columns in them, any virtual table or
// trigger: refused), then the tables and columns the source reads.
func (d *DB) schema(ctx context.Context) error {
	queries.Add(1)
	rows, err := d.db.QueryContext(ctx, `SELECT type, lower(substr(name,1,64)), lower(ltrim(substr(sql,1,64))) LIKE 'create virtual%'
		FROM sqlite_master LIMIT ?`, maxSchema+1)
	if err != nil {
		return classify(ctx, err)
	}
	n := 0
	for rows.Next() {
		var typ, name sql.NullString
		var virtual sql.NullBool
		if err := rows.Scan(&typ, &name, &virtual); err != nil {
			rows.Close()
			return classify(ctx, err)
		}
		n++
		read := slices.Contains(readTables, name.String)
		switch {
		case typ.String == "trigger":
			err = &SchemaError{Refused: "trigger"}
		case typ.String == "view" && read:
			err = &SchemaError{Table: name.String, Refused: "view"}
		case typ.String == "table" && virtual.Bool: // opencode makes none
			err = &SchemaError{Refused: "virtual table"}
			if read {
				err = &SchemaError{Table: name.String, Refused: "virtual table"}
			}
		}
		if err != nil {
			rows.Close()
			return err
		}
	}
	if err := closeRows(rows); err != nil {
		return classify(ctx, err)
	}
	if n > maxSchema {
		return fmt.Errorf("%w: more than %d schema entries", ErrLimit, maxSchema)
	}
	for _, table := range []string{"session", "message", "part", "event"} {
		queries.Add(1)
		rows, err := d.db.QueryContext(ctx, "SELECT substr(name,1,64), hidden FROM pragma_table_xinfo(?) LIMIT 1000", table)
		if err != nil {
			return classify(ctx, err)
		}
		var cols []string
		for rows.Next() {
			var c string
			var hidden int
			if err := rows.Scan(&c, &hidden); err != nil {
				rows.Close()
				return classify(ctx, err)
			}
			if hidden == 2 { // computed at each read
				rows.Close()
				return &SchemaError{Table: table, Column: c, Refused: "generated column"}
			}
			cols = append(cols, c)
		}
		if err := closeRows(rows); err != nil {
			return classify(ctx, err)
		}
		if len(cols) == 0 {
			if table == "event" {
				continue
			}
			return &SchemaError{Table: table}
		}
		for _, c := range required[table] {
			if !slices.Contains(cols, c) {
				return &SchemaError{Table: table, Column: c}
			}
		}
		switch table {
		case "event":
			d.events = true
		case "session":
			d.agent = slices.Contains(cols, "agent")
		}
	}
	queries.Add(1)
	var v sql.NullString
	if err := d.db.QueryRowContext(ctx, "SELECT substr(max(id),1,128) FROM migration").Scan(&v); err == nil {
		d.Version = v.String
	} else if ctx.Err() != nil {
		return classify(ctx, err)
	}
	return nil
}

// Events reports whether the database has the event journal.
func (d *DB) Events() bool { return d.events }

// str and num extract a JSON field as text or integer (NULL when absent
// or of another shape), so that a row of unexpected shape never fails
// the query.
func str(col, path string) string {
	return cut(fmt.Sprintf("CAST(json_extract(%s,'%s') AS TEXT)", col, path))
}

// maxField bounds, in SQL, every text column read (ids, a directory, a
// title, names): the longest a snapshot keeps (a cwd) with room to tell
// a value that is too long.
const maxField = 4096

// cut bounds the text of expr to maxField characters, in the query.
func cut(expr string) string { return fmt.Sprintf("substr(%s,1,%d)", expr, maxField) }

// sessionCols are the session columns read (agent: "NULL" when absent).
func sessionCols(agent string) string {
	return strings.Join([]string{cut("id"), cut("parent_id"), cut("directory"), cut("title"), cut(agent), "time_created", "time_updated"}, ", ")
}
func num(col, path string) string {
	return fmt.Sprintf("CAST(json_extract(%s,'%s') AS INTEGER)", col, path)
}

// valid replaces a column that is not JSON by an empty object.
func valid(col string) string {
	return fmt.Sprintf("CASE WHEN json_valid(%[1]s) THEN %[1]s ELSE '{}' END", col)
}

// message and part columns, from the JSON at col under prefix.
func messageCols(col, prefix string) []string {
	return []string{
		str(col, prefix+".role"), num(col, prefix+".time.created"), num(col, prefix+".time.completed"),
		str(col, prefix+".finish"), str(col, prefix+".error.name"), str(col, prefix+".modelID"),
		fmt.Sprintf("substr(%s,1,%d)", str(col, prefix+".error.data.message"), validate.MaxError),
	}
}
func partCols(col, prefix string) []string {
	return []string{
		str(col, prefix+".type"), str(col, prefix+".tool"), str(col, prefix+".state.status"),
		fmt.Sprintf("substr(%s,1,%d)", str(col, prefix+".text"), maxText),
		num(col, prefix+".synthetic"), str(col, prefix+".state.metadata.sessionId"),
		num(col, prefix+".state.time.start"),
		fmt.Sprintf("substr(%s,1,%d)", str(col, prefix+".state.error"), maxErrorText),
	}
}

type scanner interface{ Scan(dest ...any) error }

// messageDest returns the scan destinations of messageCols and the
// function that fills m from them after the scan.
func messageDest(m *MessageInfo) ([]any, func()) {
	var role, finish, errName, model, errText sql.NullString
	var created, completed sql.NullInt64
	return []any{&role, &created, &completed, &finish, &errName, &model, &errText}, func() {
		m.Role, m.Created, m.Completed = role.String, created.Int64, completed.Int64
		m.Finish, m.Error, m.Model, m.ErrorText = finish.String, errName.String, model.String, errText.String
	}
}

// partDest is messageDest for partCols.
func partDest(p *PartInfo) ([]any, func()) {
	var typ, tool, status, text, child sql.NullString
	var synthetic, start sql.NullInt64
	var errText sql.NullString
	return []any{&typ, &tool, &status, &text, &synthetic, &child, &start, &errText}, func() {
		p.Type, p.Tool, p.Status, p.Text = typ.String, tool.String, status.String, text.String
		p.Synthetic, p.Child, p.Started, p.Error = synthetic.Int64 != 0, child.String, start.Int64, errText.String
	}
}

func scanMessage(sc scanner, head ...any) (*MessageInfo, error) {
	m := &MessageInfo{}
	dest, fill := messageDest(m)
	if err := sc.Scan(append(head, dest...)...); err != nil {
		return nil, err
	}
	fill()
	return m, nil
}

func scanPart(sc scanner, head ...any) (*PartInfo, error) {
	p := &PartInfo{}
	dest, fill := partDest(p)
	if err := sc.Scan(append(head, dest...)...); err != nil {
		return nil, err
	}
	fill()
	return p, nil
}

// stamped is a record with the time it sorts by.
type stamped struct {
	at   int64
	kind int // 0 session, 1 message, 2 part: the order of a tie
	id   string
	r    Record
}

// Scan reads the current state: the sessions updated at or after cutoff
// (epoch ms) and their ancestors, then the messages and parts created at
// or after cutoff, in the order they were created, all in one read
// transaction; the reads that follow (Changes) start from there.
func (d *DB) Scan(ctx context.Context, cutoff int64) ([]Record, error) {
	if err := sideFiles(d.path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, readDeadline)
	defer cancel()
	recs, err := d.scan(ctx, cutoff)
	return recs, classify(ctx, err)
}

func (d *DB) scan(ctx context.Context, cutoff int64) ([]Record, error) {
	tx, err := d.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	agent := "NULL"
	if d.agent {
		agent = "agent"
	}
	queries.Add(1)
	rows, err := tx.QueryContext(ctx, `WITH RECURSIVE keep(id, n) AS (
		SELECT id, 0 FROM session WHERE time_updated >= ?1
		UNION SELECT s.parent_id, keep.n+1 FROM session s JOIN keep ON s.id = keep.id
			WHERE s.parent_id IS NOT NULL AND keep.n < 64)
		SELECT `+sessionCols(agent)+`
		FROM session WHERE id IN (SELECT id FROM keep) ORDER BY time_created, id LIMIT ?2`, cutoff, maxRows)
	if err != nil {
		return nil, err
	}
	var out []Record
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, Record{Session: s})
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}
	st, mark, err := d.tables(ctx, tx, "time_created", cutoff, false)
	if err != nil {
		return nil, err
	}
	for _, s := range st {
		out = append(out, s.r)
	}
	d.mark = max(mark, cutoff)
	clear(d.atMark)
	if d.events {
		queries.Add(1)
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT max(rowid) FROM event").Scan(&last); err != nil {
			return nil, err
		}
		d.last = last.Int64
	}
	return out, tx.Commit()
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

func scanSession(sc scanner) (*SessionInfo, error) {
	var id, parent, dir, title, agent sql.NullString
	var created, updated sql.NullInt64
	if err := sc.Scan(&id, &parent, &dir, &title, &agent, &created, &updated); err != nil {
		return nil, err
	}
	return &SessionInfo{ID: id.String, ParentID: parent.String, Directory: dir.String, Title: title.String,
		Agent: agent.String, Created: created.Int64, Updated: updated.Int64}, nil
}

// tables reads the messages and parts whose column by (time_created or
// time_updated) is at or after from, merged in that order; it returns
// them and the latest time seen.
func (d *DB) tables(ctx context.Context, tx *sql.Tx, by string, from int64, sessions bool) ([]stamped, int64, error) {
	var out []stamped
	mark := from
	if sessions {
		agent := "NULL"
		if d.agent {
			agent = "agent"
		}
		queries.Add(1)
		rows, err := tx.QueryContext(ctx, `SELECT `+sessionCols(agent)+`
			FROM session WHERE time_updated >= ? ORDER BY time_updated, id LIMIT ?`, from, maxRows)
		if err != nil {
			return nil, 0, err
		}
		for rows.Next() {
			s, err := scanSession(rows)
			if err != nil {
				rows.Close()
				return nil, 0, err
			}
			out = append(out, stamped{at: s.Updated, kind: 0, id: s.ID, r: Record{Session: s}})
		}
		if err := closeRows(rows); err != nil {
			return nil, 0, err
		}
	}
	queries.Add(1)
	rows, err := tx.QueryContext(ctx, `SELECT `+cut("id")+`, `+cut("session_id")+`, `+by+`, `+strings.Join(messageCols("d", "$"), ", ")+`
		FROM (SELECT id, session_id, time_created, time_updated, `+valid("data")+` AS d FROM message WHERE `+by+` >= ?)
		ORDER BY `+by+`, id LIMIT ?`, from, maxRows)
	if err != nil {
		return nil, 0, err
	}
	for rows.Next() {
		var id, sid sql.NullString
		var at int64
		m, err := scanMessage(rows, &id, &sid, &at)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		m.ID, m.SessionID = id.String, sid.String
		out = append(out, stamped{at: at, kind: 1, id: m.ID, r: Record{Message: m}})
	}
	if err := closeRows(rows); err != nil {
		return nil, 0, err
	}
	queries.Add(1)
	rows, err = tx.QueryContext(ctx, `SELECT `+cut("id")+`, `+cut("message_id")+`, `+cut("session_id")+`, `+by+`, `+strings.Join(partCols("d", "$"), ", ")+`
		FROM (SELECT id, message_id, session_id, time_created, time_updated, `+valid("data")+` AS d FROM part WHERE `+by+` >= ?)
		ORDER BY `+by+`, id LIMIT ?`, from, maxRows)
	if err != nil {
		return nil, 0, err
	}
	for rows.Next() {
		var id, mid, sid sql.NullString
		var at int64
		p, err := scanPart(rows, &id, &mid, &sid, &at)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		p.ID, p.MessageID, p.SessionID = id.String, mid.String, sid.String
		out = append(out, stamped{at: at, kind: 2, id: p.ID, r: Record{Part: p}})
	}
	if err := closeRows(rows); err != nil {
		return nil, 0, err
	}
	slices.SortStableFunc(out, func(a, b stamped) int {
		switch {
		case a.at != b.at:
			return cmpInt(a.at, b.at)
		case a.kind != b.kind:
			return a.kind - b.kind
		}
		return strings.Compare(a.id, b.id)
	})
	for _, s := range out {
		mark = max(mark, s.at)
	}
	return out, mark, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Changes reads what changed since the last read: the event journal's
// new rows, or (without one) the rows whose time_updated reached the
// latest one seen. It reads in one read transaction; on ErrBusy nothing
// moves, and the next call reads the same changes.
func (d *DB) Changes(ctx context.Context) ([]Record, error) {
	if err := sideFiles(d.path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, readDeadline)
	defer cancel()
	var out []Record
	var err error
	if d.events {
		out, err = d.journal(ctx)
	} else {
		out, err = d.updated(ctx)
	}
	return out, classify(ctx, err)
}

// The event types the source reads, without their version suffix; a
// version other than 1 is schema drift.
var eventFamilies = map[string]bool{
	"session.created": true, "session.updated": true, "session.deleted": true,
	"message.updated": true, "message.part.updated": true,
}

func (d *DB) journal(ctx context.Context) ([]Record, error) {
	tx, err := d.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	cols := []string{"rowid", cut("type"),
		str("d", "$.info.id"), str("d", "$.info.parentID"), str("d", "$.info.directory"), str("d", "$.info.title"),
		str("d", "$.info.agent"), num("d", "$.info.time.created"), num("d", "$.info.time.updated"), str("d", "$.info.sessionID")}
	cols = append(cols, messageCols("d", "$.info")...)
	cols = append(cols, str("d", "$.part.id"), str("d", "$.part.messageID"), str("d", "$.part.sessionID"))
	cols = append(cols, partCols("d", "$.part")...)
	q := `SELECT ` + strings.Join(cols, ", ") + ` FROM (SELECT rowid, type, ` + valid("data") +
		` AS d FROM event WHERE rowid > ? ORDER BY rowid LIMIT ?)`
	var out []Record
	last := d.last
	d.more = false
	pages := 0
	for {
		queries.Add(1)
		rows, err := tx.QueryContext(ctx, q, last, maxRows)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			n++
			rowid, r, err := d.eventRow(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			last = rowid
			if r != nil {
				out = append(out, *r)
			}
		}
		if err := closeRows(rows); err != nil {
			return nil, err
		}
		if n < maxRows {
			break
		}
		if pages++; pages == maxPages {
			d.more = true // the rest on the next read
			break
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	if last == d.last {
		// nothing new: rows deleted at the end (a session removed) make
		// rowids be used again, so start after the journal's end now
		queries.Add(1)
		var end sql.NullInt64
		if err := d.db.QueryRowContext(ctx, "SELECT max(rowid) FROM event").Scan(&end); err != nil {
			return nil, err
		}
		last = min(last, end.Int64)
	}
	d.last = last
	return out, nil
}

// eventRow decodes one row of the journal query: nil for an event the
// source does not read.
func (d *DB) eventRow(sc scanner) (int64, *Record, error) {
	var rowid int64
	var typ, id, parent, dir, title, agent, sid, pid, pmid, psid sql.NullString
	var created, updated sql.NullInt64
	m, p := &MessageInfo{}, &PartInfo{}
	md, mfill := messageDest(m)
	pd, pfill := partDest(p)
	dest := []any{&rowid, &typ, &id, &parent, &dir, &title, &agent, &created, &updated, &sid}
	dest = append(dest, md...)
	dest = append(dest, &pid, &pmid, &psid)
	dest = append(dest, pd...)
	if err := sc.Scan(dest...); err != nil {
		return 0, nil, err
	}
	family, version, _ := cutVersion(typ.String)
	if !eventFamilies[family] {
		return rowid, nil, nil
	}
	if version != "1" {
		d.drift[family]++
		return rowid, nil, nil
	}
	switch family {
	case "session.created", "session.updated", "session.deleted":
		return rowid, &Record{Session: &SessionInfo{ID: id.String, ParentID: parent.String, Directory: dir.String,
			Title: title.String, Agent: agent.String, Created: created.Int64, Updated: updated.Int64},
			Deleted: family == "session.deleted"}, nil
	case "message.updated":
		mfill()
		m.ID, m.SessionID = id.String, sid.String
		return rowid, &Record{Message: m}, nil
	default: // message.part.updated
		pfill()
		p.ID, p.MessageID, p.SessionID = pid.String, pmid.String, psid.String
		return rowid, &Record{Part: p}, nil
	}
}

// cutVersion splits "message.updated.1" into its family and version.
func cutVersion(typ string) (family, version string, ok bool) {
	i := strings.LastIndexByte(typ, '.')
	if i < 0 {
		return typ, "", false
	}
	return typ[:i], typ[i+1:], true
}

// Drift returns and clears the counts of journal events skipped because
// their type has a version the source does not know, by type family.
func (d *DB) Drift() map[string]int {
	if len(d.drift) == 0 {
		return nil
	}
	out := d.drift
	d.drift = map[string]int{}
	return out
}

func (d *DB) updated(ctx context.Context) ([]Record, error) {
	tx, err := d.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	st, mark, err := d.tables(ctx, tx, "time_updated", d.mark, true)
	if err != nil {
		return nil, err
	}
	var out []Record
	next := map[string]int64{}
	for _, s := range st {
		key := fmt.Sprint(s.kind) + s.id
		if at, ok := d.atMark[key]; ok && at == s.at {
			continue // read at the previous mark already
		}
		if s.at == mark {
			next[key] = s.at
		}
		out = append(out, s.r)
	}
	if mark > d.mark {
		d.atMark = next
	} else {
		for k, v := range next {
			d.atMark[k] = v
		}
	}
	d.mark = mark
	return out, tx.Commit()
}
