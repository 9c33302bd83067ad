package sources

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc"
)

// FollowConfig configures Follow.
type FollowConfig struct {
	// Tail says what to follow. When Tail.Recent is nil it defaults to
	// Sessions.HeldOpen (an old journal held open by a process is read).
	// Tail.Window also sets Sessions.ExpireAfter: a session with no
	// process and no event for the window leaves the hub.
	Tail TailConfig
	// RootsFor returns the roots to follow for a set of enabled harnesses;
	// nil follows Tail.Roots while any harness is on and nothing (no
	// watches at all) while all are off.
	RootsFor func(enabled []string) []string
	// Linger is how long an exited session stays (see NewSessions).
	Linger time.Duration
	// Agent says which processes are the agent's, for BindHolder, Holder
	// and HeldOpen: only a process holding the journal open for writing
	// and matched by Agent is. The zero Agent (an agent whose executable
	// is not known) accepts any writer; readers never count.
	Agent proc.Agent
	// Processes is where processes are looked up and watched; nil is
	// Machine (tests give a fake /proc tree).
	Processes Processes
	// OnTailer, when set, is given the Tailer before it runs: for a
	// source that reports its Wakes and Opens.
	OnTailer func(*Tailer)
	// Logger gets debug lines (with paths) and errors (without).
	Logger *slog.Logger
}

// Follow runs a file-based source until ctx ends, then returns nil: it
// builds a Sessions publishing to st.Publisher, the source's Handler from
// newHandler, and a Tailer over the roots of the enabled harnesses, and
// runs them on the calling goroutine. A set from st.Changes switches
// harnesses: when it changes the roots, the tailer rebuilds (Rescan, scan,
// ScanDone, which sends the reset); otherwise a reset is sent at once.
func Follow(ctx context.Context, st hub.Start, cfg FollowConfig, newHandler func(*Sessions) Handler) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rootsFor := cfg.RootsFor
	if rootsFor == nil {
		rootsFor = func(enabled []string) []string {
			if len(enabled) == 0 {
				return nil
			}
			return cfg.Tail.Roots
		}
	}
	var t *Tailer
	ss := NewSessions(ctx, st.Publisher, st.Enabled, cfg.Linger, func(f func()) { t.Post(f) }, cfg.Logger)
	ss.agent = cfg.Agent
	if cfg.Processes != nil {
		ss.procs = cfg.Processes
	}
	switch w := cfg.Tail.Window; {
	case w == 0:
		ss.ExpireAfter(DefaultWindow)
	case w > 0:
		ss.ExpireAfter(w)
	}
	tc := cfg.Tail
	tc.Roots = rootsFor(st.Enabled)
	h := newHandler(ss)
	if tc.Recent == nil {
		tc.Recent = ss.HeldOpen
		if r, ok := h.(RecentFiles); ok {
			tc.Recent = r.Recent
		}
	}
	if tc.Logger == nil {
		tc.Logger = cfg.Logger
	}
	t = NewTailer(tc, h)
	if cfg.OnTailer != nil {
		cfg.OnTailer(t)
	}
	roots := tc.Roots

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
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
					t.Post(func() {
						ss.setEnabled(set)
						if next := rootsFor(set); !slices.Equal(next, roots) {
							roots = next
							t.SetRoots(next)
							return
						}
						ss.Reset()
					})
				}
			}
		}()
	}
	err := t.Run(ctx)
	ss.close()
	return err
}

func statKey(path string) (proc.FileKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return proc.FileKey{}, err
	}
	k, _ := proc.KeyOf(fi)
	return k, nil
}

// RecentFiles is implemented by a Handler that decides itself which files
// older than the window a scan reads (TailConfig.Recent), from what it has
// read so far (claudecode: the registry's live sessions and their
// subagents); Follow asks it when the FollowConfig names no Recent, in
// place of Sessions.HeldOpen.
type RecentFiles interface {
	// Recent is TailConfig.Recent.
	Recent(path string, info fs.FileInfo) bool
}
