package sources

import (
	"context"
	"errors"
	"hash/maphash"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/internal/defaults"
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
	scans    atomic.Uint64
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
	defaults.Positive(&cfg.MaxLine, DefaultMaxLine)
	defaults.Positive(&cfg.MaxHeld, DefaultMaxHeld)
	cfg.MaxHeld = max(cfg.MaxHeld, cfg.MaxLine)
	defaults.Positive(&cfg.MaxJournal, DefaultMaxJournal)
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

// Scans counts the scans Run completed (each ended by the handler's
// ScanDone) since it started.
func (t *Tailer) Scans() uint64 { return t.scans.Load() }

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
	t.scans.Add(1)
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
