package opencode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
)

// Diagnostic codes of the source. Messages carry no path and no content.
const (
	CodeSchema     = "opencode-schema-unknown"      // a database lacks a table or column the source reads: not read
	CodeDrift      = "opencode-event-version"       // journal events of a version the source does not know were skipped
	CodeUnreadable = "opencode-database-unreadable" // not a database, corrupt, or not a regular file
	CodeRefused    = "opencode-database-refused"    // a view, virtual table, generated column or trigger where the source reads: not read
	CodeLimit      = "opencode-database-limit"      // a read passed its deadline, SQLite's memory cap or the longest value: read again on its next change
)

// maxRuns bounds the log runs remembered (the session each last named).
const maxRuns = 64

// handler maps the databases, the log and the file storage to events;
// Sessions does the rest. It runs on the source's goroutine only.
type handler struct {
	*sources.Sessions
	ctx      context.Context
	home     string
	window   time.Duration
	watch    *dirWatch
	watching bool // the watch was started
	log      *slog.Logger

	m          *Mapper
	dbs        map[string]*DB    // open databases by path
	dirty      map[string]bool   // databases changed since they were read
	all        bool              // look at every database of the home
	owner      map[string]string // session → the database (or "storage") it came from
	runs       map[string]string // log run → the session it named last
	pending    map[string]*Ask   // log run → its permission request not yet placed
	said       map[string]bool   // diagnostics given once per database and problem
	trail      *time.Timer       // the trailing read (see changed)
	trailDBs   map[string]bool   // the databases it reads
	trailStage int               // which of trailDelays is armed

	storageRoot  string            // home/storage
	held         []Record          // file storage objects read during a scan
	sessionFiles map[string]string // session object file → its session

	dirs     map[string]string // root session → its directory (the cwd of its process)
	created  map[string]int64  // root session → when it was created (epoch ms)
	touched  map[string]int64  // root session → its latest record's time (epoch ms; 0 unknown), written since the last lookup
	logOf    map[string]string // session → the log file that named it last (its process writes it)
	runOf    map[string]string // session → the log run that named it last
	runStart map[string]int64  // log run → when it began (its "creating instance" line), epoch ms
	runDir   map[string]string // log run → the directory that line names
}

func newHandler(ctx context.Context, ss *sources.Sessions, home string, window time.Duration, w *dirWatch, log *slog.Logger) *handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if window == 0 {
		window = sources.DefaultWindow
	}
	h := &handler{Sessions: ss, ctx: ctx, home: home, window: window, watch: w, log: log, storageRoot: filepath.Join(home, "storage")}
	h.reset()
	return h
}

// cutoff is the oldest change read at a scan: the window back from now;
// a negative window reads everything.
func (h *handler) cutoff() time.Time {
	if h.window < 0 {
		return time.Time{}
	}
	return time.Now().Add(-h.window)
}

// closeAll closes the databases (Run's end).
func (h *handler) closeAll() {
	if h.trail != nil {
		h.trail.Stop()
		h.trail = nil
	}
	for _, d := range h.dbs {
		d.Close()
	}
	clear(h.dbs)
}

func (h *handler) reset() {
	h.closeAll()
	h.m = NewMapper(func(id string) fold.View { return h.View(id) })
	h.dbs = map[string]*DB{}
	h.dirty = map[string]bool{}
	h.trailDBs = map[string]bool{}
	h.owner = map[string]string{}
	h.runs = map[string]string{}
	h.pending = map[string]*Ask{}
	h.held = nil
	h.sessionFiles = map[string]string{}
	h.said = map[string]bool{}
	h.dirs = map[string]string{}
	h.created = map[string]int64{}
	h.touched = map[string]int64{}
	h.logOf = map[string]string{}
	h.runOf = map[string]string{}
	h.runStart = map[string]int64{}
	h.runDir = map[string]string{}
}

// trailDelays are how long after the last change of a burst a database
// is read once more, each after the one before. SQLite writes a commit's
// frames to the -wal file (which inotify reports) and only then publishes
// it in the -shm index (a memory write inotify cannot see): a read woken
// by the write may come just before the commit is visible, and no later
// event would come for it. A writer descheduled on a busy machine can take
// longer than the first delay to publish, hence the later ones; after the
// last, nothing runs until the next change.
var trailDelays = []time.Duration{50 * time.Millisecond, 250 * time.Millisecond, time.Second}

// changed is posted by the directory watch: db changed, or (all) every
// database must be looked at. The database is read at once, and again
// trailDelays after its last change (one-shot timers, re-armed by each
// change, never running while nothing changes).
func (h *handler) changed(db string, all bool) {
	if all {
		h.all = true
		return
	}
	h.dirty[db] = true
	h.trailDBs[db] = true
	h.trailStage = 0
	if h.trail == nil {
		h.trail = time.AfterFunc(trailDelays[0], func() { h.Post(h.trailed) })
	} else {
		h.trail.Reset(trailDelays[0])
	}
}

// trailed is a trailing read of a burst of changes; it arms the next one
// until the last.
func (h *handler) trailed() {
	if h.trail == nil {
		return // stopped by a rescan after it fired
	}
	for db := range h.trailDBs {
		h.dirty[db] = true
	}
	if h.trailStage++; h.trailStage < len(trailDelays) {
		h.trail.Reset(trailDelays[h.trailStage])
		return
	}
	clear(h.trailDBs)
	h.trail = nil
}

// Line takes one line of opencode's log.
func (h *handler) Line(path string, line []byte) {
	l, ok := ParseLog(line)
	if !ok || l.Run == "" {
		return
	}
	if l.Start > 0 {
		if _, ok := h.runStart[l.Run]; !ok && len(h.runStart) >= maxRuns {
			clear(h.runStart)
			clear(h.runDir)
		}
		h.runStart[l.Run] = l.Start
		h.runDir[l.Run] = l.Dir
	}
	if l.Session == "" && l.Ask == nil {
		return
	}
	if l.Ask != nil {
		l.Ask.Session = h.runs[l.Run]
		if _, ok := h.pending[l.Run]; !ok && len(h.pending) >= maxRuns {
			clear(h.pending)
		}
		h.pending[l.Run] = l.Ask
		return
	}
	if a := h.pending[l.Run]; a != nil && a.Session == l.Session {
		delete(h.pending, l.Run) // the session moved on: the request was answered
	}
	if _, ok := h.runs[l.Run]; !ok && len(h.runs) >= maxRuns {
		clear(h.runs)
	}
	h.runs[l.Run] = l.Session
	if _, ok := h.logOf[l.Session]; !ok && len(h.logOf) >= maxRuns {
		clear(h.logOf)
	}
	h.logOf[l.Session] = path
	if _, ok := h.runOf[l.Session]; !ok && len(h.runOf) >= maxRuns {
		clear(h.runOf)
	}
	h.runOf[l.Session] = l.Run
}

// Truncated: a log file started again; nothing to drop.
func (h *handler) Truncated(string) {}

// Removed: a log file went away (rotated); nothing to drop.
func (h *handler) Removed(string) {}

// Rescan drops everything: the scan reads it all again. The first one
// (the tailer is running then, so Post works) starts the watch of the
// home directory.
func (h *handler) Rescan() {
	h.Sessions.Rescan()
	h.reset()
	if !h.watching {
		h.watching = true
		h.watch.start(h.ctx, func(db string, all bool) { h.Post(func() { h.changed(db, all) }) },
			func(code, message string) {
				h.Post(func() { h.Diagnostic(agentbridge.Diagnostic{Code: code, Message: message}) })
			})
	}
}

// ScanDone reads the file storage and every database, places the
// permission requests the log holds, then publishes the reset.
func (h *handler) ScanDone() {
	if h.Enabled(Harness) {
		orderStorage(h.held)
		h.apply("storage", h.held)
		h.held = nil
		h.openAll()
		h.asks()
		h.findProcesses()
	}
	h.dirty = map[string]bool{}
	h.all = false
	h.Sessions.ScanDone()
}

// Idle reads the databases that changed, then places the permission
// requests of the lines just read.
func (h *handler) Idle() {
	if h.Live() && h.Enabled(Harness) {
		if h.all {
			h.all = false
			h.openAll()
		}
		for _, p := range slices.Sorted(maps.Keys(h.dirty)) {
			h.read(p)
		}
		h.asks()
		h.findProcesses()
	}
	h.Sessions.Idle()
}

// openAll looks at every database of the home: new ones are opened and
// scanned, gone ones are closed and their sessions stopped.
func (h *handler) openAll() {
	entries, err := os.ReadDir(h.home)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		h.once("home", sources.CodeReadError, "the opencode data directory cannot be read")
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if dbName.MatchString(e.Name()) {
			p := filepath.Join(h.home, e.Name())
			seen[p] = true
			if h.dbs[p] == nil {
				h.read(p)
			}
		}
	}
	for p := range h.dbs {
		if !seen[p] || h.Live() {
			h.read(p) // gone; or, after the scan, what changed before the watch was in place
		}
	}
}

// read brings one database up to date: opened (and scanned) when new or
// replaced, its changes read otherwise; gone, its sessions stop.
func (h *handler) read(p string) {
	delete(h.dirty, p)
	d := h.dbs[p]
	if d != nil && !d.Same() {
		d.Close()
		delete(h.dbs, p)
		h.stopFrom(p, "database removed")
		d = nil
	}
	if d == nil {
		nd, err := OpenDB(p)
		if err != nil {
			h.failed(p, err)
			return
		}
		recs, err := nd.Scan(h.ctx, h.cutoff().UnixMilli())
		if err != nil {
			nd.Close()
			h.failed(p, err)
			return
		}
		h.dbs[p] = nd
		h.apply(p, recs)
		return
	}
	recs, err := d.Changes(h.ctx)
	if err != nil {
		h.failed(p, err)
		return
	}
	h.log.Debug("opencode database read", "db", p, "records", len(recs), "last", d.last)
	h.apply(p, recs)
	if d.More() {
		// A backlog larger than one read: the rest after this wake, so
		// that the log and the other databases are read in between.
		h.Post(func() { h.dirty[p] = true })
	}
	for family, n := range d.Drift() {
		h.Diagnostic(agentbridge.Diagnostic{Code: CodeDrift, Message: fmt.Sprintf(
			"skipped %d opencode journal events of type %s with a version this source does not know", n, family)})
	}
}

// failed reports a database that cannot be read now; a busy one is read
// again on its next change.
func (h *handler) failed(p string, err error) {
	var se *SchemaError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if d := h.dbs[p]; d != nil {
			d.Close()
			delete(h.dbs, p)
		}
		h.stopFrom(p, "database removed")
	case errors.Is(err, ErrNotReady):
		h.log.Debug("opencode database being created (no header yet): not opened, read again on its next change")
	case errors.Is(err, ErrBusy):
		h.log.Debug("opencode database busy: read again on its next change")
	case errors.As(err, &se) && se.Refused != "":
		h.once(p+"\x00refused", CodeRefused, "an opencode database was not read ("+se.Error()+"): the source reads only plain tables and runs nothing a database defines; its sessions are not reported")
	case errors.Is(err, ErrLimit):
		h.once(p+"\x00limit", CodeLimit, "an opencode database was not read: a read passed its deadline, SQLite's memory cap or the longest value it takes; it is read again when it changes")
	case errors.As(err, &se) && se.Table == "session" && se.Column == "":
		h.log.Debug("opencode database without tables yet (being created): read again on its next change")
	case errors.As(err, &se):
		h.once(p+"\x00schema", CodeSchema, "an opencode database has a schema this source does not know ("+se.Error()+"); its sessions are not reported")
	case errors.Is(err, fs.ErrPermission):
		h.once(p+"\x00perm", sources.CodePermission, "an opencode database cannot be read (permission denied)")
	default:
		h.once(p+"\x00bad", CodeUnreadable, "an opencode database cannot be read (not a database, or damaged); it is read again when it changes")
	}
}

// once gives a diagnostic once per key until the next scan.
func (h *handler) once(key, code, msg string) {
	if h.said[key] {
		return
	}
	h.said[key] = true
	h.Diagnostic(agentbridge.Diagnostic{Code: code, Message: msg})
}

// apply maps records from one database (or "storage") and folds the events.
func (h *handler) apply(from string, recs []Record) {
	for _, r := range recs {
		if r.Session != nil && r.Session.ID != "" && !r.Deleted {
			if _, ok := h.owner[r.Session.ID]; !ok && len(h.owner) < 1<<16 {
				h.owner[r.Session.ID] = from
			}
		}
		h.emit(h.m.Apply(r))
		h.touch(r)
		if r.Session != nil && r.Deleted {
			delete(h.owner, r.Session.ID)
			delete(h.dirs, r.Session.ID)
			delete(h.created, r.Session.ID)
			delete(h.touched, r.Session.ID)
		}
	}
	for code, n := range h.m.Skipped {
		for range n {
			h.BadLine(code)
		}
	}
	clear(h.m.Skipped)
}

func (h *handler) emit(outs []Out) {
	for _, o := range outs {
		h.Event(o.Session, Harness, o.Event)
	}
}

// stopFrom stops the sessions read from one database.
func (h *handler) stopFrom(from, reason string) {
	var ids []string
	for id, f := range h.owner {
		if f == from {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		delete(h.owner, id)
		h.m.Forget(id)
		h.Stop(id, reason)
	}
}

// asks places the pending permission requests; one that fits no running
// tool is dropped (its tool moved on, or it is from an old log).
func (h *handler) asks() {
	for _, run := range slices.Sorted(maps.Keys(h.pending)) {
		out, _ := h.m.Ask(*h.pending[run])
		h.emit(out)
	}
	clear(h.pending)
}

// CodeStorage counts object files of the file storage that were skipped
// (not an object of their kind).
const CodeStorage = "opencode-storage-skipped"

// MatchWhole picks the object files of the file storage.
func (h *handler) MatchWhole(p string) bool { return storageKind(h.storageRoot, p) != "" }

// WholeFile takes one object file of the file storage: held until the
// scan is over (the directories come in name order, messages before
// sessions), mapped at once afterwards. A session file that goes away
// stops its session.
func (h *handler) WholeFile(p string, data []byte) {
	if !h.Enabled(Harness) {
		return
	}
	kind := storageKind(h.storageRoot, p)
	if data == nil {
		if id := h.sessionFiles[p]; id != "" {
			delete(h.sessionFiles, p)
			if h.owner[id] == "storage" {
				h.apply("storage", []Record{{Session: &SessionInfo{ID: id}, Deleted: true}})
			}
		}
		return
	}
	r, ok := DecodeStorage(kind, data)
	if !ok {
		h.BadLine(CodeStorage)
		return
	}
	if r.Session != nil && (h.sessionFiles[p] != "" || len(h.sessionFiles) < 1<<16) {
		h.sessionFiles[p] = r.Session.ID
	}
	if !h.Live() {
		h.held = append(h.held, r)
		return
	}
	h.apply("storage", []Record{r})
}

// touch notes that a record was written to a root session (its own, or
// a subagent's below it), and when: its process is asked for at the next
// lookup.
func (h *handler) touch(r Record) {
	var id string
	var at int64
	switch {
	case r.Session != nil && !r.Deleted:
		id, at = r.Session.ID, r.Session.Updated
		if r.Session.ParentID == "" && r.Session.Directory != "" && len(h.dirs) < 1<<16 {
			h.dirs[id] = r.Session.Directory
			h.created[id] = r.Session.Created
		}
	case r.Message != nil && !r.Deleted:
		id, at = r.Message.SessionID, max(r.Message.Created, r.Message.Completed)
	case r.Part != nil && !r.Deleted:
		id, at = r.Part.SessionID, r.Part.Started
	default:
		return
	}
	root := h.m.Root(id)
	if root == "" {
		return
	}
	if c := h.created[root]; at < c || c == 0 {
		at = 0 // a time before the session's own creation is not a write time
	}
	h.touched[root] = max(h.touched[root], at)
}

// findProcesses asks the runtime's binder for the opencode process of each
// session written since the last lookup: one process serves one TUI, one
// database serves every process, so the process is found by the session's
// directory (its cwd), started before the session's latest record, and,
// where two share a directory, by the log run that named the session last
// (its first line, "creating instance", comes soon after its process
// starts; the runs of other directories are not weighed against the
// candidates), or the log file that named it. A resumed session
// (opencode -s) whose process ended is bound to the new one at its next
// write.
func (h *handler) findProcesses() {
	for _, id := range slices.Sorted(maps.Keys(h.touched)) {
		dir := h.dirs[id]
		if dir == "" || h.Get(id) == nil {
			continue
		}
		q := sources.ProcQuery{Cwd: dir, Journal: h.logOf[id]}
		if at := h.runStart[h.runOf[id]]; at > 0 {
			q.Started = time.UnixMilli(at)
			for run, r := range h.runStart {
				if d := h.runDir[run]; d == "" || d == dir {
					// a run of another directory is no candidate's
					q.Runs = append(q.Runs, time.UnixMilli(r))
				}
			}
		}
		if at := h.touched[id]; at > 0 {
			q.Running = time.UnixMilli(at)
		}
		h.FindProcess(id, q)
	}
	clear(h.touched)
}
