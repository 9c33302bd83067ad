package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	_ "modernc.org/sqlite" // the driver "sqlite"

	"github.com/agentbridge/agentbridge/internal/smallfile"
)

// MaxQueueBytes bounds the memory of the facts recorded and not yet
// written (those queued and those the writer is writing), counted as the
// compact records the queue keeps (about 130 bytes a fact: see queued).
// Past it, Record drops the facts it is handed (counted in
// agentbridge_history_dropped_facts_total, logged once per overflow): the
// live path never waits for the disk. 64 MiB holds about half a million
// facts: the start-up scans of a home with several hundred large recent
// journals (one hand-out per source, each scan's facts at its end) with
// room to spare; the writer takes the whole queue at each wake, so beyond
// that the bound is only reached when the disk stalls for a long time.
const MaxQueueBytes = 64 << 20

// writeDelay is how long the writer waits, once woken, before it takes
// the queue: a commit's facts are written a tenth of a second after it, so
// that the write (a transaction, a few hundred µs of CPU) does not run
// while the live path delivers the same commit to the stream clients, and
// the facts of a busy tenth of a second go in one transaction. A timer
// armed by a wake, never a poll: an idle writer sleeps. Sync and the end
// of Run write at once.
const writeDelay = 100 * time.Millisecond

// pruneEvery is the period of the retention prune Run does (besides the
// one at its start): a scheduled job, so a timer, not a poll.
const pruneEvery = 24 * time.Hour

// busyTimeout is how long a statement waits for another connection's (or
// process's) write lock before it fails.
const busyTimeout = 5 * time.Second

// Options configure a Store. Every field may be left zero.
type Options struct {
	Prices    []Price               // the user's prices, before the built-in table
	Retention time.Duration         // 0: DefaultRetention; negative: keep everything
	Logger    *slog.Logger          // nil: slog.Default()
	Now       func() time.Time      // nil: time.Now
	Registry  prometheus.Registerer // nil: no metrics registered
	// Project returns the project root of a working directory; nil: the
	// nearest directory at or above it that holds a .git entry (the
	// repository's top), else the directory itself. It runs on the
	// writer's goroutine, once per working directory (cached), never on
	// the live path; a remote host's directory is never looked up here
	// (its project is its cwd).
	Project func(cwd string) string
}

// Store is the history database and its writer. Record is the hub's
// Recorder; Run writes what it records; the queries read concurrently
// with it. All methods are safe for concurrent use.
type Store struct {
	o      Options
	log    *slog.Logger
	prices prices

	wdb *sql.DB // one connection, write transactions (BEGIN IMMEDIATE)
	rdb *sql.DB // readers (query_only)

	maxQueue int // MaxQueueBytes (smaller in tests)

	mu     sync.Mutex // guards queue, queued, flying, last, spare, lost, freshLost, running
	queue  []item
	queued int          // the memory of the queue's facts (handOutSize)
	flying int          // the memory of the facts the writer took and is writing
	last   *factSession // the session part of the last fact queued
	spare  []item       // the last queue written, emptied, for reuse
	lost   int          // facts dropped since the writer last looked
	// freshLost maps a session whose Fresh fact was dropped to the place
	// in queue where it was.
	freshLost map[sessionKey]int
	running   bool
	wake      chan struct{} // cap 1: the queue has something
	now       chan struct{} // cap 1: a Sync waits: write at once
	flushed   func()        // tests: called after each write of the queue

	dropped prometheus.Counter
	written prometheus.Counter
	failed  prometheus.Counter

	overflow bool // the writer logged a loss and has not written without one since

	// wmu serializes write transactions (the writer's and Prune's) and
	// guards the writer's state below.
	wmu      sync.Mutex
	sessions map[sessionKey]*sessionState
	projects map[string]string
}

// item is one entry of the writer's queue: a fact, a wait answered
// through the bridge, or a Sync's marker.
type item struct {
	fact     queued
	answered *answeredMark
	sync     chan error
}

type answeredMark struct {
	host, source, id string
	at               int64
}

// Open opens (creating it when it does not exist) the history database at
// path, in a directory made 0700 when missing; the file is made 0600. The
// path must name a regular file (or nothing): a symbolic link, directory,
// FIFO, socket or device is refused without being opened for reading, and
// so are such side files (-wal, -shm). A file that is not a SQLite
// database, a database of another program (tables that are not the
// history's), a history written by a newer version, or one whose tables
// were replaced by views or carry triggers, is refused with an error that
// says so; the file is never rewritten then.
func Open(path string, o Options) (*Store, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	pr, err := newPrices(o.Prices)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if err := prepareFile(path); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	s := &Store{
		o: o, log: o.Logger, prices: pr,
		wake:     make(chan struct{}, 1),
		now:      make(chan struct{}, 1),
		maxQueue: MaxQueueBytes,
		sessions: map[sessionKey]*sessionState{},
		projects: map[string]string{},
	}
	if s.wdb, err = openPool(path, true); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*busyTimeout)
	defer cancel()
	if err := migrate(ctx, s.wdb); err != nil {
		s.wdb.Close()
		return nil, fmt.Errorf("history: %w", err)
	}
	if s.rdb, err = openPool(path, false); err != nil {
		s.wdb.Close()
		return nil, fmt.Errorf("history: %w", err)
	}
	s.metrics(o.Registry)
	return s, nil
}

// Close closes the database; call it after Run returned. Facts recorded
// and not written are lost: Run, ended with its context, writes them
// first.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return errors.Join(s.rdb.Close(), s.wdb.Close())
}

func (s *Store) metrics(reg prometheus.Registerer) {
	s.dropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agentbridge_history_dropped_facts_total",
		Help: "Facts the history dropped because its write queue was full.",
	})
	s.written = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agentbridge_history_written_facts_total",
		Help: "Facts the history wrote to its database.",
	})
	s.failed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agentbridge_history_write_failures_total",
		Help: "Write transactions of the history that failed (their facts are lost).",
	})
	if reg == nil {
		return
	}
	for _, c := range []prometheus.Collector{s.dropped, s.written, s.failed} {
		if err := reg.Register(c); err != nil {
			s.log.Warn("history: metric not registered", "err", err)
		}
	}
}

// prepareFile makes the directory of path (0700) and checks what is at
// path and its side files: nothing, or a regular file. The check opens
// nothing that could block (Lstat, then an O_NONBLOCK|O_NOFOLLOW open whose
// descriptor is checked again), so a FIFO cannot hang it. A missing
// database file is created 0600.
func prepareFile(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make the database's directory: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("the database's directory: %w", err)
	} else if !fi.IsDir() {
		return errors.New("the database's directory is not a directory")
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if err := checkRegular(path+suffix, false); err != nil {
			return fmt.Errorf("the database's %s file: %w", suffix[1:], err)
		}
	}
	return checkRegular(path, true)
}

// checkRegular checks that name is a regular file (not a symbolic link),
// or missing; create makes a missing one, empty and 0600.
func checkRegular(name string, create bool) error {
	fi, err := os.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !create {
			return nil
		}
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|smallfile.OpenFlags, 0o600)
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		return f.Close()
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return errors.New("is a symbolic link (refused)")
	case !fi.Mode().IsRegular():
		return notRegular(fi.Mode())
	}
	f, err := os.OpenFile(name, os.O_RDONLY|smallfile.OpenFlags, 0)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return notRegular(fi.Mode())
	}
	return nil
}

func notRegular(m fs.FileMode) error {
	return fmt.Errorf("is a %s: %w", smallfile.Type(m), smallfile.ErrNotRegular)
}

// openPool opens a connection pool on the database: the writer's (one
// connection, transactions BEGIN IMMEDIATE so that they never fail to
// upgrade a read lock) or the readers' (query_only). Every connection
// waits busyTimeout for a lock, and writes with synchronous=NORMAL, which
// in WAL mode is durable up to the last checkpoint and never corrupts the
// database on a crash (a power loss may lose the last transactions).
func openPool(path string, writer bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "trusted_schema(OFF)")
	if writer {
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(ON)")
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("open the database: %w", err)
	}
	if writer {
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(4)
	}
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}
