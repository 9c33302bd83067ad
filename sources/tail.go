package sources

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fsnotify/fsnotify"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
)

// Defaults of TailConfig.
const (
	DefaultWindow  = 2 * time.Hour // journals written longer ago are only stat'ed at a scan
	DefaultMaxLine = 8 << 20       // longer lines are skipped with CodeLineTooLong
	readChunk      = 256 << 10     // one read(2); lines are delivered from it without copying
	// tailSum is how many bytes before a file's offset the tailer keeps a
	// hash of, to tell an in-place rewrite from an append. Every read
	// starts that far before the offset: the bytes it checks come with the
	// bytes it reads, in the same read(2).
	tailSum = 4 << 10
)

// Bounds against hostile journals (TailConfig.MaxHeld, MaxJournal).
const (
	// DefaultMaxHeld bounds, per Tailer, the bytes held for unfinished
	// lines of all its files together (CodeHeldLimit).
	DefaultMaxHeld = 16 << 20
	// DefaultMaxJournal: a journal with more unread bytes than this (real
	// ones stay far below) is followed from its end (CodeJournalTooLarge).
	DefaultMaxJournal = 1 << 30
	// readSlice is what Run reads of one file before it looks at other
	// files' events, posted functions and cancellation again.
	readSlice = 4 << 20
)

// Diagnostic codes the tailer and Sessions report. Messages never carry a
// path or file content.
const (
	CodeLineTooLong    = "line-too-long"          // a line over MaxLine was skipped; the file is still followed
	CodeInvalidUTF8    = "invalid-utf8"           // lines that are not UTF-8 were skipped
	CodeInvalidJSON    = "invalid-json"           // lines that are not JSON objects were skipped (BadLine)
	CodeInvalidRecord  = "invalid-record"         // records with unusable fields were skipped (BadLine)
	CodeInvalidEvent   = "invalid-event"          // events the fold rejected were dropped
	CodePermission     = "permission-denied"      // a directory or journal cannot be read
	CodeWatchLimit     = "inotify-watch-limit"    // fs.inotify.max_user_watches reached
	CodeInstanceLimit  = "inotify-instance-limit" // fs.inotify.max_user_instances reached
	CodeEventsLost     = "file-events-lost"       // inotify queue overflow: rescanned everything
	CodeReadError      = "read-error"             // a journal or directory could not be read
	CodeRootNotDir     = "root-not-directory"     // a configured root is not a directory
	CodeWatchError     = "watch-error"            // fsnotify failed otherwise: rescanned everything
	CodeReset          = "reset-failed"           // the hub refused a reset (a bug: logged too)
	CodePublishRefused = "publish-refused"        // the hub refused an event or upsert
)

// Diagnostic codes of the bounds against hostile journals.
const (
	CodeHeldLimit       = "unfinished-lines-limit" // an unfinished line did not fit the memory held for all of them: skipped
	CodeJournalTooLarge = "journal-too-large"      // a journal far larger than any real one is followed from its end
)

// Handler receives what a Tailer finds. Every method is called on the
// goroutine running Tailer.Run, one call at a time, never concurrently with
// another Handler call or a function given to Tailer.Post.
type Handler interface {
	// Line is one complete line of the file at path, without its '\n'.
	// Lines are delivered in file order, each exactly once, whole, even
	// when the writer split it across several writes. Empty lines and lines
	// that are not valid UTF-8 (CodeInvalidUTF8) or longer than MaxLine
	// (CodeLineTooLong) are not delivered. line is only valid during the
	// call (it points into a reused buffer): decode or copy what you keep.
	Line(path string, line []byte)
	// Truncated says the file at path was truncated, replaced by another
	// file (a different inode, e.g. renamed over it), or rewritten in place
	// (the bytes just before the offset read so far are no longer what was
	// read: a record removed or moved, whatever the size now). The tailer
	// reads it again from offset 0 right after this call: drop what the
	// file told you so far (Sessions.Restart).
	Truncated(path string)
	// Removed says the file at path is gone: deleted, renamed away, or its
	// directory went away. Nothing more comes from it unless a file appears
	// at path again, which is then read from offset 0 like a new file.
	Removed(path string)
	// Rescan says every file is about to be delivered again from offset 0:
	// drop all state taken from files. It is called before the first scan
	// of Run, after SetRoots, and when the watches are rebuilt after lost
	// events (inotify overflow) or a vanished root. ScanDone follows once
	// the scan has read every recent file to EOF.
	Rescan()
	// ScanDone says the scan that Rescan announced is complete: every file
	// modified within Window (or for which Recent said yes) was read to
	// EOF. Send a full reset now; after it, report changes as they come.
	ScanDone()
	// Idle is called whenever the tailer has handled everything pending and
	// is about to sleep, and between the slices of a long read: the place
	// to flush batched work (diagnostic counts, upserts of restarted
	// sessions).
	Idle()
	// Diagnostic reports a typed problem with the watches or the files. The
	// message carries no path and no file content.
	Diagnostic(d agentbridge.Diagnostic)
}

// LongLines is implemented by a Handler that wants to know of each line
// skipped as longer than MaxLine: LongLine gets the line's first bytes (at
// most LongLineHead; only valid during the call) as soon as the line is
// known to be too long, in file order with the lines delivered, once per
// line. A journal whose records name their kind before their bulk (Gemini
// CLI's chats: id, type, then content and tool calls with their output)
// can still tell what such a record was. A line skipped over a sparse
// file's hole is not reported (nothing of it is read).
type LongLines interface {
	LongLine(path string, head []byte)
}

// LongLineHead bounds the head of a skipped line given to LongLine.
const LongLineHead = 64 << 10

// TailConfig says what a Tailer follows.
type TailConfig struct {
	// Roots are directory trees to follow, recursively; directories that
	// appear later are watched too (and walked right after the watch is
	// added, so nothing created in between is missed). A root that does not
	// exist yet is waited for by watching its nearest existing ancestor; a
	// root that vanishes makes the tailer rebuild (Rescan … ScanDone).
	// Roots are made absolute; paths handed to the Handler are root +
	// "/" + the path below it.
	Roots []string
	// Match picks the regular files to follow by path; nil follows files
	// whose name ends in ".jsonl".
	Match func(path string) bool
	// Dirs picks the subdirectories to descend into (roots always are);
	// nil descends into all. Symbolic links are never followed below a root.
	Dirs func(path string) bool
	// Window: at a scan, a file last modified longer ago than Window is only
	// stat'ed, never opened, and is picked up (read from offset 0) when it
	// is written again. Zero means DefaultWindow; negative reads every file.
	// Files that appear or change after the scan are always read.
	Window time.Duration
	// Recent, when set, is asked at a scan about each file older than
	// Window; true reads it anyway (e.g. a live process holds it open). It
	// runs on the tailer's goroutine and should be cheap.
	Recent func(path string, info fs.FileInfo) bool
	// MaxLine bounds a line in bytes; zero means DefaultMaxLine.
	MaxLine int
	// MaxHeld bounds the bytes held for the unfinished last lines of all
	// files together (a hostile home may hold many journals each ending
	// in a line without end). A fragment that does not fit is dropped
	// and its line skipped (CodeHeldLimit); the file is still followed.
	// Zero means DefaultMaxHeld; it is raised to MaxLine when lower.
	MaxHeld int
	// MaxJournal: when a journal has more unread bytes than this (at a
	// scan or when it grows), they are not read: the journal is followed
	// from its end (CodeJournalTooLarge). Holes of sparse files are
	// skipped without reading whatever their size. Zero means
	// DefaultMaxJournal.
	MaxJournal int64
	// Logger logs at debug level only (paths included); nil discards.
	Logger *slog.Logger
}

// Tailer follows journal files under directory trees with fsnotify (one
// inotify instance, watches on directories only) and hands their complete
// lines to a Handler. It keeps, per file, an offset, a hash of the 4 KiB
// before it (an in-place rewrite changes them: the file is read again, see
// read) and a partial-line buffer (all of them together bounded by
// MaxHeld); it reads from one
// reusable buffer and passes lines without copying them, at most a slice
// of one file at a time, so that a huge journal lets every other file,
// posted function and cancellation through. It never polls: a Tailer
// with nothing changing makes no system calls and runs no timer.
//
// Create it with NewTailer, then call Run once. Post and Wakes are safe from
// any goroutine; SetRoots only from the Run goroutine (a Handler call or a
// posted function).
type Tailer struct {
	cfg  TailConfig
	h    Handler
	log  *slog.Logger
	wake chan struct{} // capacity 1: "something is pending"

	mu     sync.Mutex
	posted []func()
	ended  bool   // Run returned: Post drops
	in     *inbox // the live watcher's pending events

	// state owned by the Run goroutine
	roots   []string
	w       *fsnotify.Watcher
	stopW   func() // ends the current watcher's drain goroutine
	dirs    map[string]struct{}
	files   map[string]*file
	waiting map[string][]string // watched ancestor → missing roots under it
	said    map[string]bool     // once-per-scan diagnostics already given
	buf     []byte
	bad     map[string]int // per-batch counts of skipped lines by code
	now     time.Time      // time of the current scan
	running bool
	ctx     context.Context     // Run's
	more    map[string]struct{} // files read up to a slice, with more to read
	held    int                 // bytes held by the files' part buffers (their capacity); may count forgotten files until recount
	slice   int64               // readSlice; smaller in tests
	scan    bool                // inside rebuild: read every file to EOF

	// whole files (watch.go)
	whole     WholeFiles      // the Handler's capability, or nil
	wholeSeen map[string]bool // whole files delivered (Run goroutine)

	seed    maphash.Seed // of the files' tail hashes
	nocheck bool         // benchmarks only: the tailer without the rewrite check

	// beforeWatch, tests only, runs before each watch is added: the file
	// system can change there, between a look and the watch.
	beforeWatch func(path string)

	wakes    atomic.Uint64
	opens    atomic.Uint64
	rewrites atomic.Uint64 // in-place rewrites found
	bytesIn  atomic.Uint64 // bytes read from journals
}

// file is what the tailer keeps per followed file.
type file struct {
	dev, ino uint64
	off      int64  // bytes consumed (delivered, skipped or buffered in part)
	part     []byte // the incomplete last line
	skip     bool   // inside an over-long line: drop bytes up to the next '\n'
	// sum hashes the min(off, tailSum) bytes before off as they were
	// read; summed says it is known (not after fromEnd, which reads none).
	sum    uint64
	summed bool
}

// inbox collects a watcher's events between wakes; bursts for one path
// coalesce into one entry.
type inbox struct {
	paths map[string]fsnotify.Op
	lost  bool  // ErrEventOverflow
	err   error // another watcher error
}

// NewTailer returns a Tailer following cfg.Roots for h. It touches nothing
// until Run.
func NewTailer(cfg TailConfig, h Handler) *Tailer {
	if cfg.Match == nil {
		cfg.Match = func(p string) bool { return strings.HasSuffix(p, ".jsonl") }
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultMaxLine
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = DefaultMaxHeld
	}
	cfg.MaxHeld = max(cfg.MaxHeld, cfg.MaxLine)
	if cfg.MaxJournal <= 0 {
		cfg.MaxJournal = DefaultMaxJournal
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tailer{
		cfg:   cfg,
		h:     h,
		whole: wholeFiles(h),
		log:   log,
		wake:  make(chan struct{}, 1),
		roots: absRoots(cfg.Roots),
		slice: readSlice,
		ctx:   context.Background(),
		seed:  maphash.MakeSeed(),
	}
}

// absRoots returns roots made absolute and clean, so that event names and
// roots compare as strings.
func absRoots(roots []string) []string {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if a, err := filepath.Abs(r); err == nil {
			r = a
		}
		out = append(out, filepath.Clean(r))
	}
	return out
}

// Run scans the roots (Rescan, the lines of every recent file, ScanDone)
// and then follows them until ctx ends; it returns nil then, after
// releasing every watch. All Handler calls and posted functions run on the
// goroutine that calls Run. Problems (no inotify instance, a directory that
// cannot be read) are reported as diagnostics, never as an error: the
// error result is there for future use and is nil today.
func (t *Tailer) Run(ctx context.Context) error {
	t.buf = make([]byte, readChunk)
	t.ctx = ctx
	t.running = true
	defer func() {
		t.closeWatcher()
		t.mu.Lock()
		t.running = false
		t.ended = true
		t.posted = nil
		t.mu.Unlock()
	}()
	t.rebuild()
	for {
		t.flushBad()
		t.h.Idle()
		if len(t.more) > 0 {
			// Files with more to read: a slice of each, then whatever
			// came meanwhile (events, posted functions, cancellation), in
			// turn, never sleeping; neither starves the other.
			if ctx.Err() != nil {
				return nil
			}
			t.readMore()
			select {
			case <-t.wake:
			default:
				continue
			}
		} else {
			select {
			case <-ctx.Done():
				return nil
			case <-t.wake:
			}
		}
		t.wakes.Add(1)
		activity.wakes.Add(1)
		t.mu.Lock()
		posted := t.posted
		t.posted = nil
		in := t.in
		var paths map[string]fsnotify.Op
		var lost bool
		var werr error
		if in != nil {
			paths, lost, werr = in.paths, in.lost, in.err
			in.paths, in.lost, in.err = nil, false, nil
		}
		t.mu.Unlock()

		for _, f := range posted {
			f()
		}
		switch {
		case lost:
			t.log.Debug("inotify queue overflow: rebuilding watches")
			t.diag(CodeEventsLost, "file events were lost (inotify queue overflow); every journal is read again")
			t.rebuild()
			continue
		case werr != nil:
			t.log.Debug("watcher error: rebuilding watches", "err", werr)
			t.diag(CodeWatchError, "file watching failed ("+errnoText(werr)+"); every journal is read again")
			t.rebuild()
			continue
		}
		if len(paths) == 0 {
			continue
		}
		names := make([]string, 0, len(paths))
		for p := range paths {
			names = append(names, p)
		}
		sort.Strings(names) // parents before children
		for _, p := range names {
			if t.handle(p, paths[p]) {
				break // rebuilt: the scan covered the rest
			}
		}
	}
}

// Post runs f on the Run goroutine, after the Handler call in progress (if
// any). It never blocks; functions posted after Run returned are dropped.
// Use it to bring results of other goroutines (a process exit, a timer, a
// harness switch) into the source's single goroutine.
func (t *Tailer) Post(f func()) {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return
	}
	t.posted = append(t.posted, f)
	t.mu.Unlock()
	t.signal()
}

// SetRoots replaces the followed roots and rebuilds: Rescan, a scan of the
// new roots, ScanDone. nil or empty roots release every watch (used when a
// source's harnesses are all switched off). Call it only from the Run
// goroutine.
func (t *Tailer) SetRoots(roots []string) {
	t.roots = absRoots(roots)
	if t.running {
		t.rebuild()
	}
}

// Activity counts, across every Tailer and Sessions of the process, what
// the file-based sources did: the witness that an idle bridge does
// nothing (a test reads it before and after a quiet interval).
type Activity struct {
	Wakes  uint64 // Tailer.Run wake-ups (file events, posted functions)
	Reads  uint64 // journal files opened to read
	Timers uint64 // Sessions timers that fired (linger, inactivity)
}

var activity struct{ wakes, reads, timers atomic.Uint64 }

// ReadActivity returns the process-wide Activity counts so far.
func ReadActivity() Activity {
	return Activity{Wakes: activity.wakes.Load(), Reads: activity.reads.Load(), Timers: activity.timers.Load()}
}

// Wakes counts how often Run woke up since it started: the idle test's
// witness that nothing polls.
func (t *Tailer) Wakes() uint64 { return t.wakes.Load() }

// Opens counts the journal files Run opened since it started.
func (t *Tailer) Opens() uint64 { return t.opens.Load() }

func (t *Tailer) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// rebuild drops every watch and all file state, makes a new watcher and
// scans the roots: Rescan, lines, ScanDone.
func (t *Tailer) rebuild() {
	t.closeWatcher()
	t.dirs = map[string]struct{}{}
	t.files = map[string]*file{}
	t.wholeSeen = nil
	t.waiting = map[string][]string{}
	t.said = map[string]bool{}
	t.more = map[string]struct{}{}
	t.held = 0
	t.h.Rescan()
	if len(t.roots) > 0 {
		if err := t.openWatcher(); err != nil {
			t.watchErr(err)
		} else {
			t.now = time.Now()
			t.scan = true
			for _, r := range t.roots {
				t.setupRoot(r)
			}
			t.scan = false
		}
	}
	t.flushBad()
	t.h.ScanDone()
}

func (t *Tailer) openWatcher() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	in := &inbox{}
	t.mu.Lock()
	t.in = in
	t.mu.Unlock()
	done := make(chan struct{})
	finished := make(chan struct{})
	go t.drain(w, in, done, finished)
	t.w = w
	t.stopW = func() {
		close(done)
		w.Close()
		<-finished
	}
	return nil
}

func (t *Tailer) closeWatcher() {
	if t.w == nil {
		return
	}
	t.stopW()
	t.w, t.stopW = nil, nil
	t.mu.Lock()
	t.in = nil
	t.mu.Unlock()
}

// drain empties the watcher's channels promptly (the kernel queue is what
// overflows otherwise) into in, and wakes Run. It ends when done closes or
// the watcher is closed.
func (t *Tailer) drain(w *fsnotify.Watcher, in *inbox, done <-chan struct{}, finished chan<- struct{}) {
	defer close(finished)
	for {
		select {
		case <-done:
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			t.mu.Lock()
			if in.paths == nil {
				in.paths = map[string]fsnotify.Op{}
			}
			in.paths[ev.Name] |= ev.Op
			t.mu.Unlock()
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			t.mu.Lock()
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				in.lost = true
			} else if in.err == nil {
				in.err = err
			}
			t.mu.Unlock()
		}
		t.signal()
	}
}

// setupRoot watches and scans root, or waits for it to appear.
func (t *Tailer) setupRoot(root string) {
	fi, err := os.Stat(root)
	switch {
	case err == nil && fi.IsDir():
		if t.addTree(root) {
			// Gone between the stat and the watch (a tree being removed):
			// wait for it like a root missing from the start.
			t.waitFor(root)
		}
	case err == nil:
		t.diagOnce(CodeRootNotDir, "a configured journal root is not a directory; its sessions are not reported")
		t.waitFor(root) // follow it again once a directory takes its place
	case errors.Is(err, fs.ErrNotExist):
		t.waitFor(root)
	default:
		t.fsErr(err, "a journal root cannot be read")
	}
}

// waitFor watches the nearest existing ancestor of a missing root.
func (t *Tailer) waitFor(root string) {
	for a := filepath.Dir(root); ; a = filepath.Dir(a) {
		if t.waitOn(a, root) || a == filepath.Dir(a) {
			return
		}
	}
}

// waitOn waits for root below ancestor a when a is a directory: it
// watches a, then looks for the next directory on the way down, which may
// have been made before the watch took (mkdir -p). It reports false when
// a is no directory, or vanished between the stat and the watch (rm -r of
// the tree above root, still in progress): its event went to a's parent,
// which is not watched, so the caller waits on that parent instead.
func (t *Tailer) waitOn(a, root string) bool {
	if fi, err := os.Stat(a); err != nil || !fi.IsDir() {
		return false
	}
	if _, watched := t.waiting[a]; !watched {
		if _, dir := t.dirs[a]; !dir {
			if err := t.watch(a); err != nil {
				if Vanished(err) {
					t.log.Debug("ancestor of a missing root vanished before its watch", "watching", a)
					return false
				}
				t.watchErr(err)
				return true
			}
		}
	}
	t.waiting[a] = append(t.waiting[a], root)
	t.log.Debug("waiting for journal root", "root", root, "watching", a)
	if fi, err := os.Stat(childToward(a, root)); err == nil && fi.IsDir() {
		t.recheckWaiting(a, t.waiting[a])
	}
	return true
}

// watch adds an inotify watch on path.
func (t *Tailer) watch(path string) error {
	if t.beforeWatch != nil {
		t.beforeWatch(path)
	}
	return t.w.Add(path)
}

// Vanished reports whether a watch failed because its path no longer
// leads to anything: it went away since it was looked at (a tree being
// removed). A watcher that waits for a missing directory on its nearest
// existing ancestor then waits on the next directory up instead.
func Vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// addTree watches dir, then walks it (so nothing created before the watch
// took is missed), following files and descending into subdirectories.
// Files older than the window are only stat'ed, at a scan and in a
// directory that appears later alike. It reports whether dir vanished
// before its watch took; below a root, the watched parent saw it go.
func (t *Tailer) addTree(dir string) (gone bool) {
	if _, ok := t.dirs[dir]; ok {
		return false
	}
	if err := t.watch(dir); err != nil {
		if Vanished(err) {
			return true
		}
		t.watchErr(err)
		return false
	}
	t.dirs[dir] = struct{}{}
	d, err := os.Open(dir)
	if err != nil {
		if !Vanished(err) { // else gone after the watch took: its event follows
			t.fsErr(err, "a journal directory cannot be read")
		}
		return false
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		t.fsErr(err, "a journal directory cannot be read")
	}
	for _, e := range entries {
		p := dir + "/" + e.Name()
		switch {
		case e.IsDir():
			if t.cfg.Dirs == nil || t.cfg.Dirs(p) {
				t.addTree(p)
			}
		case t.isWhole(p, false):
			if !t.wholeOld(p, e) {
				t.readWhole(p)
			}
		case e.Type().IsRegular() && t.cfg.Match(p):
			if _, ok := t.files[p]; ok {
				continue
			}
			if t.cfg.Window > 0 {
				info, err := e.Info()
				if err != nil {
					continue // gone meanwhile
				}
				if info.ModTime().Before(t.now.Add(-t.cfg.Window)) && (t.cfg.Recent == nil || !t.cfg.Recent(p, info)) {
					continue // old: picked up when written again
				}
			}
			f := &file{}
			t.files[p] = f
			t.read(p, f)
		}
	}
	return false
}

// handle acts on the coalesced events of one path, treating the file
// system as the truth and the events as hints. It reports whether it
// rebuilt everything.
func (t *Tailer) handle(p string, op fsnotify.Op) bool {
	if roots, ok := t.waiting[filepath.Dir(p)]; ok && leadsTo(p, roots) {
		t.recheckWaiting(filepath.Dir(p), roots)
	}
	if _, ok := t.dirs[p]; ok {
		if op.Has(fsnotify.Remove) || op.Has(fsnotify.Rename) {
			return t.dirGone(p)
		}
		return false
	}
	if _, ok := t.waiting[p]; ok && (op.Has(fsnotify.Remove) || op.Has(fsnotify.Rename)) {
		t.log.Debug("watched ancestor of a missing root vanished: rebuilding")
		t.rebuild()
		return true
	}
	fi, err := os.Lstat(p)
	if err != nil {
		if _, ok := t.files[p]; ok {
			delete(t.files, p)
			t.h.Removed(p)
		}
		t.wholeGone(p)
		return false
	}
	switch {
	case fi.IsDir():
		parent := filepath.Dir(p)
		if _, ok := t.dirs[parent]; ok && (t.cfg.Dirs == nil || t.cfg.Dirs(p)) {
			t.now = time.Now()
			t.addTree(p)
		}
	case t.isWhole(p, fi.IsDir()):
		if _, ok := t.dirs[filepath.Dir(p)]; ok {
			t.readWhole(p) // on any change, chmod included: it is small
		}
	case fi.Mode().IsRegular() && t.cfg.Match(p):
		f := t.files[p]
		if f == nil && op == fsnotify.Chmod {
			return false // attributes only, of a file not followed (an old one)
		}
		// A Chmod alone of a followed file reads it too: it may have
		// been unreadable until now (chmod 000, written, chmod 644).
		if f == nil {
			if _, ok := t.dirs[filepath.Dir(p)]; !ok {
				return false
			}
			f = &file{}
			t.files[p] = f
		}
		t.read(p, f)
	default:
		if _, ok := t.files[p]; ok { // a journal replaced by something else
			delete(t.files, p)
			t.h.Removed(p)
		}
	}
	return false
}

// dirGone forgets a directory that vanished or was replaced, with its
// subdirectories and files; a vanished root rebuilds everything. A
// directory that exists again at the path is watched and walked anew.
func (t *Tailer) dirGone(dir string) bool {
	for _, r := range t.roots {
		if r == dir {
			t.log.Debug("journal root vanished or was replaced: rebuilding", "root", dir)
			t.rebuild()
			return true
		}
	}
	prefix := dir + "/"
	for d := range t.dirs {
		if d == dir || strings.HasPrefix(d, prefix) {
			delete(t.dirs, d)
			_ = t.w.Remove(d) // often gone already with its inode
		}
	}
	for _, p := range below(t.files, dir) {
		delete(t.files, p)
		t.h.Removed(p)
	}
	t.wholeGoneUnder(dir)
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
		if _, ok := t.dirs[filepath.Dir(dir)]; ok {
			t.now = time.Now()
			t.addTree(dir)
		}
	}
	return false
}

// childToward returns the entry of directory anc on the way down to path,
// which lies below anc.
func childToward(anc, path string) string {
	for {
		up := filepath.Dir(path)
		if up == anc || up == path {
			return path
		}
		path = up
	}
}

// leadsTo reports whether p is one of roots or an ancestor of one.
func leadsTo(p string, roots []string) bool {
	for _, r := range roots {
		if r == p || strings.HasPrefix(r, p+"/") {
			return true
		}
	}
	return false
}

// recheckWaiting sets up the missing roots under a watched ancestor once
// something changed in it.
func (t *Tailer) recheckWaiting(anc string, roots []string) {
	delete(t.waiting, anc)
	if _, dir := t.dirs[anc]; !dir {
		_ = t.w.Remove(anc)
	}
	for _, r := range roots {
		t.now = time.Now()
		t.setupRoot(r)
	}
}

// readMore reads the next slice of every file with more to read.
func (t *Tailer) readMore() {
	names := make([]string, 0, len(t.more))
	for p := range t.more {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		delete(t.more, p)
		if f := t.files[p]; f != nil {
			t.read(p, f)
		}
	}
}

// read reads the file from its offset and delivers its complete lines: to
// EOF during a scan (rebuild), else one slice, leaving the file in t.more
// when there is more. A smaller size than the offset (truncation), another
// inode at the path (replacement) or other bytes before the offset than
// were read (an in-place rewrite: a writer that removed or moved records
// and wrote the rest back) reads it again from 0 after Truncated. Holes of
// a sparse file too long to be part of a line are skipped, not read; more
// than MaxJournal unread bytes are not read at all.
//
// The rewrite check costs no system call of its own: each read(2) starts
// min(offset, tailSum) bytes before the offset, and the hash of those
// bytes is compared with the one kept from the last read. An append
// leaves them as they were; a writer that truncates a file and writes it
// again, shorter or longer, or that moves records, changes them. (A
// rewrite that leaves the last tailSum bytes before the offset exactly as
// they were is not seen, and needs none: what follows them is read.)
func (t *Tailer) read(p string, f *file) {
	// openJournal: never wait for a FIFO's writer nor follow a link.
	fd, err := os.OpenFile(p, os.O_RDONLY|openJournal, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
			delete(t.files, p)
			if f.ino != 0 {
				t.h.Removed(p)
			}
			return
		}
		t.fsErr(err, "a journal cannot be read")
		return
	}
	defer fd.Close()
	t.opens.Add(1)
	activity.reads.Add(1)
	fi, err := fd.Stat()
	if err != nil {
		t.fsErr(err, "a journal cannot be read")
		return
	}
	if !fi.Mode().IsRegular() {
		delete(t.files, p)
		if f.ino != 0 {
			t.h.Removed(p)
		}
		return
	}
	k, _ := proc.KeyOf(fi)
	dev, ino := k.Dev, k.Ino
	if f.ino != 0 && (dev != f.dev || ino != f.ino || fi.Size() < f.off) {
		t.log.Debug("journal truncated or replaced", "path", p)
		t.restart(p, f)
	}
	f.dev, f.ino = dev, ino
	size := fi.Size()
	check := f.summed && f.off > 0 && !t.nocheck
	if size == f.off && !check {
		return
	}
	if size-f.off > t.cfg.MaxJournal {
		t.fromEnd(fd, f, size)
		return
	}
	var read int64
	for {
		if !t.scan && read >= t.slice {
			t.more[p] = struct{}{} // the rest after a look at everything else
			return
		}
		if t.ctx.Err() != nil {
			return
		}
		if !check {
			// (With a check pending, the bytes before the offset come
			// first; a hole after it is skipped at the next turn.)
			t.skipHole(fd, f, size)
		}
		k := 0
		if !t.nocheck {
			k = int(min(f.off, tailSum))
		}
		n, err := fd.ReadAt(t.buf, f.off-int64(k))
		t.bytesIn.Add(uint64(n))
		if check {
			check = false
			if n < k || maphash.Bytes(t.seed, t.buf[:k]) != f.sum {
				t.log.Debug("journal rewritten in place", "path", p)
				t.rewrites.Add(1)
				t.restart(p, f)
				f.dev, f.ino = dev, ino
				continue
			}
		}
		if n > k {
			f.off += int64(n - k)
			read += int64(n - k)
			if !t.nocheck {
				w := int(min(f.off, tailSum))
				f.sum, f.summed = maphash.Bytes(t.seed, t.buf[n-w:n]), true
			}
			t.split(p, f, t.buf[k:n])
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.fsErr(err, "a journal cannot be read")
			}
			return
		}
	}
}

// restart forgets what was read of f and tells the Handler, which reads
// it again from offset 0 next.
func (t *Tailer) restart(p string, f *file) {
	t.dropPart(f)
	*f = file{}
	t.h.Truncated(p)
}

// skipHole moves f past a hole of a sparse file at its offset when the
// hole alone is longer than MaxLine: its NUL bytes would only make the
// line they are in too long, so the line is skipped as reading them would
// (CodeLineTooLong), without reading them. Data written into the hole
// later is not seen; a journal is only ever appended to.
func (t *Tailer) skipHole(fd *os.File, f *file, size int64) {
	data, err := seekData(fd, f.off) // the offset is unused: reads are ReadAt
	switch {
	case errors.Is(err, errHoleToEnd):
		data = size
	case err != nil:
		return // no SEEK_DATA here: read the bytes
	}
	if data-f.off <= int64(t.cfg.MaxLine) {
		return
	}
	if !f.skip {
		t.tooLong(f)
	}
	f.off = data
}

// fromEnd follows a journal with too many unread bytes from its end: the
// line in progress there is skipped unless the byte before the end ends a
// line.
func (t *Tailer) fromEnd(fd *os.File, f *file, size int64) {
	t.count(CodeJournalTooLarge)
	t.dropPart(f)
	f.off = size
	f.skip = true
	f.summed = false // nothing read: the next read hashes what is there
	var last [1]byte
	if n, _ := fd.ReadAt(last[:], size-1); n == 1 && last[0] == '\n' {
		f.skip = false
	}
}

// split delivers the complete lines of data, joining the file's partial
// line, and keeps the new trailing fragment.
func (t *Tailer) split(p string, f *file, data []byte) {
	max := t.cfg.MaxLine
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if f.skip {
				return
			}
			if len(f.part)+len(data) > max {
				t.longLine(p, f, data)
				t.tooLong(f)
				return
			}
			if !t.hold(f, data) {
				t.dropPart(f)
				f.skip = true
				t.count(CodeHeldLimit)
			}
			return
		}
		line := data[:i]
		data = data[i+1:]
		if f.skip {
			f.skip = false
			continue
		}
		if len(f.part) > 0 {
			if len(f.part)+len(line) > max {
				t.longLine(p, f, line)
				t.tooLong(f)
				f.skip = false
				continue
			}
			if !t.hold(f, line) {
				t.dropPart(f)
				t.count(CodeHeldLimit)
				continue
			}
			t.deliver(p, f.part)
			if cap(f.part) > 64<<10 {
				t.dropPart(f) // don't keep a big buffer per file
			} else {
				f.part = f.part[:0]
			}
			continue
		}
		if len(line) > max {
			t.longLine(p, f, line)
			t.tooLong(f)
			f.skip = false
			continue
		}
		t.deliver(p, line)
	}
}

// longLine gives a Handler that implements LongLines the head of the line
// that f's unfinished part and more begin, before it is skipped.
func (t *Tailer) longLine(p string, f *file, more []byte) {
	ll, ok := t.h.(LongLines)
	if !ok {
		return
	}
	head := f.part[:min(len(f.part), LongLineHead)]
	if n := LongLineHead - len(head); n > 0 && len(more) > 0 {
		head = append(head[:len(head):len(head)], more[:min(len(more), n)]...) // a copy: f.part is not grown
	}
	ll.LongLine(p, head)
}

func (t *Tailer) tooLong(f *file) {
	t.dropPart(f)
	f.skip = true
	t.count(CodeLineTooLong)
}

// hold appends data to the unfinished line of f when the bytes held for
// all files stay within MaxHeld (growth is accounted by capacity); false
// when they would not, and f is left as it was.
func (t *Tailer) hold(f *file, data []byte) bool {
	need := len(f.part) + len(data)
	if need <= cap(f.part) {
		f.part = append(f.part, data...)
		return true
	}
	room := t.cfg.MaxHeld - (t.held - cap(f.part))
	if need > room {
		// Files forgotten since (removed, replaced, their directory gone)
		// took their fragments with them: count again before refusing.
		t.recount()
		if room = t.cfg.MaxHeld - (t.held - cap(f.part)); need > room {
			return false
		}
	}
	c := min(max(need, 2*cap(f.part), 512), room, t.cfg.MaxLine)
	c = max(c, need)
	part := make([]byte, len(f.part), c)
	copy(part, f.part)
	t.held += c - cap(f.part)
	f.part = append(part, data...)
	return true
}

// recount sets t.held to what the followed files hold. Files are dropped
// from t.files in many places without telling t.held (their fragments go
// with them); hold calls this before it refuses.
func (t *Tailer) recount() {
	t.held = 0
	for _, f := range t.files {
		t.held += cap(f.part)
	}
}

// dropPart frees the unfinished line of f.
func (t *Tailer) dropPart(f *file) {
	t.held -= cap(f.part)
	f.part = nil
}

func (t *Tailer) deliver(p string, line []byte) {
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if len(line) == 0 {
		return
	}
	if !utf8.Valid(line) {
		t.count(CodeInvalidUTF8)
		return
	}
	t.h.Line(p, line)
}

func (t *Tailer) count(code string) {
	if t.bad == nil {
		t.bad = map[string]int{}
	}
	t.bad[code]++
}

// flushBad turns the skipped-line counts of a batch into one diagnostic per
// code.
func (t *Tailer) flushBad() {
	if len(t.bad) == 0 {
		return
	}
	codes := make([]string, 0, len(t.bad))
	for c := range t.bad {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		n := t.bad[c]
		switch c {
		case CodeHeldLimit:
			t.diag(c, fmt.Sprintf("skipped %s whose unfinished part did not fit the %d MiB held for the unfinished lines of all journals together; the journals are still followed", lines(n), t.cfg.MaxHeld>>20))
		case CodeJournalTooLarge:
			t.diag(c, fmt.Sprintf("a journal grew by more than %d MiB at once, far more than any real one; it is followed from its end, and what it held is not reported", t.cfg.MaxJournal>>20))
		case CodeLineTooLong:
			t.diag(c, fmt.Sprintf("skipped %s over %d MiB; the journal is still followed", lines(n), t.cfg.MaxLine>>20))
		case CodeInvalidUTF8:
			t.diag(c, fmt.Sprintf("skipped %s that %s not valid UTF-8", lines(n), are(n)))
		case CodeSideNotRegular, CodeSideTooLarge:
			t.diag(c, sideMessage(c, n))
		}
	}
	clear(t.bad)
}

func lines(n int) string {
	if n == 1 {
		return "1 journal line"
	}
	return fmt.Sprintf("%d journal lines", n)
}

func are(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func (t *Tailer) diag(code, msg string) {
	t.h.Diagnostic(agentbridge.Diagnostic{Code: code, Message: msg})
}

func (t *Tailer) diagOnce(code, msg string) {
	if t.said[code] {
		return
	}
	t.said[code] = true
	t.diag(code, msg)
}

// watchErr reports a failure to create a watcher or add a watch; the
// inotify limits name their sysctl.
func (t *Tailer) watchErr(err error) {
	t.log.Debug("watch failed", "err", err)
	t.diagOnce(WatchDiagnostic(err))
}

// WatchDiagnostic is the typed diagnostic of a failure to watch a
// directory with inotify (the limits named with the sysctl to raise), for
// every source that watches on its own. It carries no path.
func WatchDiagnostic(err error) (code, message string) {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return CodeWatchLimit, "the inotify watch limit is reached, so some journal directories are not followed; raise the sysctl fs.inotify.max_user_watches (e.g. sysctl -w fs.inotify.max_user_watches=524288), then restart agentbridge"
	case errors.Is(err, syscall.EMFILE):
		return CodeInstanceLimit, "the inotify instance limit is reached, so journals are not followed; raise the sysctl fs.inotify.max_user_instances (e.g. sysctl -w fs.inotify.max_user_instances=1024), then restart agentbridge"
	case errors.Is(err, fs.ErrPermission):
		return CodePermission, "a journal directory cannot be watched (permission denied); its sessions are not reported"
	}
	return CodeWatchError, "a journal directory cannot be watched (" + errnoText(err) + ")"
}

// fsErr reports a failure to read a directory or journal without its path.
func (t *Tailer) fsErr(err error, what string) {
	t.log.Debug(what, "err", err)
	if errors.Is(err, fs.ErrPermission) {
		t.diagOnce(CodePermission, what+" (permission denied); its sessions are not reported")
		return
	}
	t.diagOnce(CodeReadError, what+" ("+errnoText(err)+")")
}

// errnoText names an error without the path an *fs.PathError carries.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		return "event queue overflow"
	}
	return "unexpected error"
}
