package claudecode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
)

// Options configure a Source.
type Options struct {
	// ConfigDir is Claude Code's configuration directory: the value of
	// CLAUDE_CONFIG_DIR, else ~/.claude (see DefaultConfigDir). Required.
	ConfigDir string
	// Window: at start, transcripts last written longer ago are not read
	// (unless a live process in the registry writes them). 0 means
	// sources.DefaultWindow.
	Window time.Duration
	// Linger is how long an exited session stays listed; 0 means
	// sources.DefaultLinger.
	Linger time.Duration
	// Logger gets debug lines (with paths) and errors (without); nil
	// discards.
	Logger *slog.Logger
}

// DefaultConfigDir returns the directory Claude Code itself uses:
// $CLAUDE_CONFIG_DIR when set, else ~/.claude.
func DefaultConfigDir() (string, error) {
	if d := os.Getenv(EnvConfigDir); d != "" {
		return filepath.Abs(d)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("claude code config dir: %w", err)
	}
	return filepath.Join(home, ".claude"), nil
}

// Source reports Claude Code sessions: it implements hub.Source.
type Source struct {
	o      Options
	info   agentbridge.SourceInfo
	tailer atomic.Pointer[sources.Tailer] // the running tailer, for tests
	scans  atomic.Int64                   // completed scans, for tests
}

var _ hub.Source = (*Source)(nil)

// New returns a Source for o. It reads nothing yet, except whether the
// live registry directory exists, which decides what Info says about
// waiting.
func New(o Options) *Source {
	o.ConfigDir = filepath.Clean(o.ConfigDir)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	waiting := agentbridge.Observe{How: agentbridge.Inferred, From: "journal"}
	if fi, err := os.Stat(filepath.Join(o.ConfigDir, "sessions")); err == nil && fi.IsDir() {
		waiting = agentbridge.Observe{How: agentbridge.Observed, From: "registry"}
	}
	return &Source{o: o, info: agentbridge.SourceInfo{
		ID:                   SourceID,
		DisplayName:          DisplayName,
		Harnesses:            []agentbridge.Harness{{ID: Harness, DisplayName: DisplayName}},
		EnvironmentVariables: []string{EnvConfigDir},
		Observes: map[string]agentbridge.Observe{
			"waiting":   waiting,
			"exited":    {How: agentbridge.Observed, From: "process"},
			"subagents": {How: agentbridge.Observed, From: "journal"},
			"title":     {How: agentbridge.Observed, From: "journal"},
			"model":     {How: agentbridge.Observed, From: "journal"},
		},
	}}
}

// Info implements hub.Source. "waiting" is observed when the Claude Code
// install keeps the live registry (sessions/<pid>.json, 2.1.x) at the time
// the source is created, inferred otherwise (from a pending AskUserQuestion
// or ExitPlanMode tool); a registry that appears later is used all the
// same, but Info does not change while the hub runs.
func (s *Source) Info() agentbridge.SourceInfo { return s.info }

func (s *Source) projectsDir() string { return filepath.Join(s.o.ConfigDir, "projects") }
func (s *Source) registryDir() string { return filepath.Join(s.o.ConfigDir, "sessions") }

// Run implements hub.Source: it follows the transcripts and the registry
// until ctx ends. Everything runs on one goroutine (the tailer's), except
// the registry watcher, which reads files and posts what it read.
func (s *Source) Run(ctx context.Context, st hub.Start) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var t *sources.Tailer
	post := func(f func()) { t.Post(f) }
	// Sessions always has the harness on: switching it off is done here, by
	// following nothing (an empty reset), which needs no change of
	// Sessions' switches (see handler.switchHarnesses).
	ss := sources.NewSessions(ctx, st.Publisher, []string{Harness}, s.o.Linger, post, s.o.Logger)
	h := newHandler(s, ss)
	on := slices.Contains(st.Enabled, Harness)
	h.enabled = on
	var roots []string
	if on {
		roots = []string{s.projectsDir()}
	}
	t = sources.NewTailer(sources.TailConfig{
		Roots:  roots,
		Match:  isTranscript,
		Window: s.o.Window,
		Recent: h.recent,
		Logger: s.o.Logger,
	}, h)
	s.tailer.Store(t)

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	reg := &registryWatch{dir: s.registryDir(), post: post, log: s.o.Logger, h: h}
	h.regOn = func(on bool) {
		if on {
			// As at start: the table is full before the rescan, so that
			// live sessions are bound, not reported exited.
			h.loadRegistry(reg.readAll())
			reg.start(ctx, &wg)
		} else {
			reg.stop()
		}
	}
	if on {
		// Read the registry before the first scan, so that transcripts of
		// live processes are bound (and read even when old) from the start.
		h.loadRegistry(reg.readAll())
		reg.start(ctx, &wg)
	}
	if st.Changes != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case set, ok := <-st.Changes:
					if !ok {
						return
					}
					set = slices.Clone(set)
					t.Post(func() { h.switchHarnesses(t, set) })
				}
			}
		}()
	}
	return t.Run(ctx)
}

// isTranscript picks the files the tailer follows: JSONL transcripts under
// projects/ (root sessions and subagents alike).
func isTranscript(p string) bool { return strings.HasSuffix(p, ".jsonl") }

// fileKind tells what a transcript path is.
type fileKind int

const (
	rootFile    fileKind = iota // projects/<slug>/<sessionId>.jsonl
	childFile                   // projects/<slug>/<sessionId>/subagents/**/agent-<id>.jsonl (2.1.2+)
	besideFile                  // projects/<slug>/agent-<id>.jsonl (2.0.x sidechain beside the session)
	ignoredFile                 // anything else (workflow journals, …)
)

// classify returns the kind of path below projects/, the parent (or own)
// Claude session id, and the subagent's agentId for child files.
func classify(projects, p string) (k fileKind, sessionID, agentID string) {
	rel, err := filepath.Rel(projects, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return ignoredFile, "", ""
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	name := strings.TrimSuffix(parts[len(parts)-1], ".jsonl")
	switch {
	case len(parts) == 2 && strings.HasPrefix(name, "agent-"):
		return besideFile, "", strings.TrimPrefix(name, "agent-")
	case len(parts) == 2:
		return rootFile, name, ""
	case len(parts) >= 4 && parts[2] == "subagents" && strings.HasPrefix(name, "agent-"):
		return childFile, parts[1], strings.TrimPrefix(name, "agent-")
	}
	return ignoredFile, "", ""
}

// registryWatch follows the registry directory with fsnotify and posts
// each file's new content (or its removal) to the source's goroutine.
type registryWatch struct {
	dir  string
	post func(func())
	log  *slog.Logger
	h    *handler

	cancel context.CancelFunc
}

// regFile is one registry file as read: data nil means removed.
type regFile struct {
	pid  int
	data []byte
}

// readAll reads every registry file now.
func (r *registryWatch) readAll() []regFile {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return nil
	}
	var out []regFile
	for _, e := range ents {
		pid := RegistryPID(e.Name())
		if pid == 0 || !e.Type().IsRegular() {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(r.dir, e.Name())); err == nil {
			out = append(out, regFile{pid, b})
		}
	}
	return out
}

func (r *registryWatch) stop() {
	if r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
}

// start runs the watcher goroutine (owned by wg, ended by ctx or stop).
func (r *registryWatch) start(ctx context.Context, wg *sync.WaitGroup) {
	h := r.h
	if r.cancel != nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := r.run(ctx, h); err != nil && ctx.Err() == nil {
			r.log.Debug("registry watch failed", "err", err)
			r.post(func() {
				h.ss.Diagnostic(agentbridge.Diagnostic{Code: "registry-watch-failed", Message: "the Claude Code process registry cannot be watched; waiting and exits are inferred from transcripts only"})
			})
		}
	}()
}

// run watches the registry directory, or while it does not exist its
// nearest existing ancestor, until ctx ends.
func (r *registryWatch) run(ctx context.Context, h *handler) error {
	for {
		w, err := newWatcher()
		if err != nil {
			return err
		}
		watched, err := watchNearest(w, r.dir)
		if err != nil {
			w.Close()
			return err
		}
		if watched == r.dir {
			// Read everything once the watch is in place: files written
			// before it are not missed.
			files := r.readAll()
			r.post(func() { h.syncRegistry(files) })
		}
		again, err := r.loop(ctx, w, watched)
		w.Close()
		if err != nil || !again {
			return err
		}
	}
}
