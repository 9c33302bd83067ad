package sources

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc"
)

// Agent is the registration shape of a source: its Single
// (ids, homes, environment, observes, hook vocabulary), the files it
// follows, its agent's processes and its handler. A source package
// declares one Agent and registers it with RegisterAgent from init; the
// source it makes (AgentSource) follows the files with the handler.
//
// Most agents' handler is declarative: a *Journals (files, per-session
// state, line mapper, side file), whose handler finds a session's process
// by cwd and Process. A source whose handler does more than Journals can
// say writes its own Handler and names it with HandlerFunc; the
// registration is the same.
type Agent struct {
	Single
	// Optional sources run only when their home is named explicitly
	// (Registration.Optional).
	Optional bool
	// Process says which processes are the agent's (FollowConfig.Agent),
	// by which the runtime finds a session's process
	// (Sessions.FindProcess); zero when the handler binds processes
	// otherwise.
	Process proc.Agent
	// Tail returns the files a source made with o follows (roots, Match,
	// Dirs); its Window and MaxLine are o's (Options.Follow).
	Tail func(o Options) TailConfig
	// RootsFor, when set, is FollowConfig.RootsFor of a source made with
	// o: the roots of the harnesses switched on, for a source with more
	// than one (Single.Harnesses) whose harnesses keep their files apart.
	RootsFor func(o Options, enabled []string) []string
	// InfoFor, when set, is the Info of a source made with o, computed
	// when it is made (claudecode: whether "waiting" is observed depends
	// on what its home holds); the registration's Info stays
	// Single.Info().
	InfoFor func(o Options) agentbridge.SourceInfo
	// Handler makes the handler of the source's sessions: a *Journals, or
	// a HandlerFunc.
	Handler HandlerMaker
	// Run, when set, is the run of a source that keeps more beside its
	// tailer than a handler can own (codex: a close watch living as long
	// as the run); it calls Follow itself, and Tail, RootsFor, Process
	// and Handler are unused. o is the source's.
	Run func(ctx context.Context, st hub.Start, o Options) error
	// Metrics, when set, are the source's own instruments (opencode: the
	// queries it ran): the source RegisterAgent makes is then a
	// *CollectingSource, which the hub exposes at GET /metrics.
	Metrics prometheus.Collector
}

// HandlerMaker makes the Handler of the sessions ss of agent a's source
// made with o; it runs on the source's goroutine (Follow).
type HandlerMaker interface {
	NewHandler(a *Agent, o Options, ss *Sessions) Handler
}

// HandlerFunc is a HandlerMaker written by hand, for a source whose
// handler does more than Journals can say; o is the source's (its Home
// names where the files are).
type HandlerFunc func(o Options, ss *Sessions) Handler

// NewHandler returns f(o, ss).
func (f HandlerFunc) NewHandler(_ *Agent, o Options, ss *Sessions) Handler { return f(o, ss) }

// RegisterAgent registers the source a describes (Register): its
// constructor is a.New.
func RegisterAgent(a *Agent) {
	Register(Registration{
		Info: a.Info(), HomeEnv: a.HomeEnv, DefaultHome: a.DefaultHome, Optional: a.Optional, Hooks: a.Hooks,
		New: func(o Options) hub.Source {
			if a.Metrics != nil {
				return &CollectingSource{a.New(o), a.Metrics}
			}
			return a.New(o)
		},
	})
}

// CollectingSource is the source of an Agent with Metrics: its
// AgentSource, and the agent's Metrics as its prometheus.Collector (a
// hub.Source that is a Collector has its instruments exposed with the
// hub's).
type CollectingSource struct {
	*AgentSource
	prometheus.Collector
}

// New returns the source of a for the agent's home o.Home; it touches
// nothing until Run.
func (a *Agent) New(o Options) *AgentSource {
	s := &AgentSource{a: a, o: o}
	if a.InfoFor != nil {
		info := a.InfoFor(o)
		s.info = &info
	}
	return s
}

// AgentSource is the source an Agent makes. It implements hub.Source.
type AgentSource struct {
	a      *Agent
	o      Options
	info   *agentbridge.SourceInfo // a.InfoFor(o), when a has InfoFor
	tailer atomic.Pointer[Tailer]  // the running tailer (Tailer)
}

// Info describes the source: a.InfoFor(o) as it was when the source was
// made, else a.Info().
func (s *AgentSource) Info() agentbridge.SourceInfo {
	if s.info != nil {
		return *s.info
	}
	return s.a.Info()
}

// Tailer returns the tailer of the running source, nil before Run has
// made it or when the agent has its own Run: its Wakes, Opens and Scans
// are a test's witnesses.
func (s *AgentSource) Tailer() *Tailer { return s.tailer.Load() }

// Run follows the agent's files until ctx ends (see hub.Source), with its
// handler and the sessions' processes found by a.Process; or runs a.Run
// when the agent has one.
func (s *AgentSource) Run(ctx context.Context, st hub.Start) error {
	if s.a.Run != nil {
		return s.a.Run(ctx, st, s.o)
	}
	cfg := s.o.Follow(s.a.Tail(s.o))
	cfg.Agent, cfg.OnTailer = s.a.Process, s.tailer.Store
	if s.a.RootsFor != nil {
		cfg.RootsFor = func(enabled []string) []string { return s.a.RootsFor(s.o, enabled) }
	}
	return Follow(ctx, st, cfg, func(ss *Sessions) Handler { return s.a.Handler.NewHandler(s.a, s.o, ss) })
}

var (
	_ hub.Source = (*AgentSource)(nil)
	_ hub.Source = (*CollectingSource)(nil)
)
