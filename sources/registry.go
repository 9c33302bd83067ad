package sources

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/validate"
)

// Registration describes one built-in source: what it is, where its agent
// keeps its home, and how to make it. A source package registers itself
// from init; package sources/all imports every one of them, so that
// adding an agent is one package plus one import line, and neither the
// server nor the configuration names a source.
type Registration struct {
	// Info is the source's static description: id, display name,
	// harnesses, the environment variables it reads and what it observes.
	// The source's own Info may refine Observes once it sees its home.
	Info agentbridge.SourceInfo
	// HomeEnv is the agent's own variable naming its home (CLAUDE_CONFIG_DIR,
	// CODEX_HOME, COPILOT_HOME…); empty when the agent has none. Only an
	// absolute value is honoured, as the agents themselves do.
	HomeEnv string
	// DefaultHome returns the home when neither the configuration
	// (sources.<id>.home) nor HomeEnv names one; getenv reads the bridge's
	// environment. Empty means the home cannot be named (no HOME): the
	// source is left out with a warning. Nil means there is no default.
	DefaultHome func(getenv func(string) string) string
	// Optional sources run only when their home is named explicitly, by
	// the configuration or HomeEnv (the reference example agent).
	Optional bool
	// New makes the source for a resolved home. It must not touch the
	// file system before Run.
	New func(o Options) hub.Source
	// Hooks is the agent's hook vocabulary (Hooks); nil: the agent has no
	// hooks the bridge takes.
	Hooks *Hooks
}

// Options is what a registered source is made with.
type Options struct {
	// Home is the agent's home, absolute.
	Home string
	// Window: journals last written longer ago are not read at start
	// (TailConfig.Window); zero means DefaultWindow.
	Window time.Duration
	// Linger is how long an exited session stays listed; zero means
	// DefaultLinger.
	Linger time.Duration
	// Logger gets debug lines (with paths) and errors (without); never nil.
	Logger *slog.Logger
	// Getenv reads the bridge's environment, for the agent's other
	// variables; never nil.
	Getenv func(string) string
	// MaxLine bounds a journal line in bytes (TailConfig.MaxLine); zero
	// means DefaultMaxLine. The server leaves it zero; tests lower it to
	// replay a real journal's longest line as one over the bound.
	MaxLine int
	// Processes is where the source looks processes up; nil is Machine
	// (tests: a fake /proc tree).
	Processes Processes
}

var (
	regMu sync.Mutex
	regs  = map[string]Registration{}
)

// Register adds a built-in source. It is called from the source package's
// init and panics on a programming error: an invalid or duplicate id, no
// harness, no constructor, or hooks of a harness not the source's or
// without events.
func Register(r Registration) {
	id := r.Info.ID
	switch {
	case !validate.ValidHarnessID(id):
		panic(fmt.Sprintf("sources: register %q: invalid source id", id))
	case len(r.Info.Harnesses) == 0:
		panic(fmt.Sprintf("sources: register %q: no harness", id))
	case r.New == nil:
		panic(fmt.Sprintf("sources: register %q: no constructor", id))
	}
	for _, h := range r.Info.Harnesses {
		if !validate.ValidHarnessID(h.ID) {
			panic(fmt.Sprintf("sources: register %q: invalid harness id %q", id, h.ID))
		}
	}
	if h := r.Hooks; h != nil {
		if !slices.ContainsFunc(r.Info.Harnesses, func(x agentbridge.Harness) bool { return x.ID == h.Harness }) {
			panic(fmt.Sprintf("sources: register %q: hooks of harness %q, not the source's", id, h.Harness))
		}
		if len(h.Events) == 0 {
			panic(fmt.Sprintf("sources: register %q: hooks without events", id))
		}
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := regs[id]; dup {
		panic(fmt.Sprintf("sources: %q registered twice", id))
	}
	regs[id] = r
}

// Registered returns every registered source, sorted by id.
func Registered() []Registration {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]Registration, 0, len(regs))
	for _, r := range regs {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Registration) int {
		switch {
		case a.Info.ID < b.Info.ID:
			return -1
		case a.Info.ID > b.Info.ID:
			return 1
		}
		return 0
	})
	return out
}

// Lookup returns the registration of source id.
func Lookup(id string) (Registration, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	r, ok := regs[id]
	return r, ok
}

// ResolveHome says where the source's agent keeps its home: configured
// (sources.<id>.home, already absolute) when set, else HomeEnv when it is
// absolute, else DefaultHome unless the source is Optional. Empty means
// the source has no home to follow.
func (r Registration) ResolveHome(configured string, getenv func(string) string) string {
	if configured != "" {
		return configured
	}
	if r.HomeEnv != "" {
		if v := getenv(r.HomeEnv); v != "" && filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
	}
	if r.Optional || r.DefaultHome == nil {
		return ""
	}
	return r.DefaultHome(getenv)
}

// HomeUnder returns a DefaultHome that is the path below the user's home
// directory ($HOME/<rel>), or empty when HOME is unset.
func HomeUnder(rel ...string) func(getenv func(string) string) string {
	return func(getenv func(string) string) string {
		h := getenv("HOME")
		if h == "" || !filepath.IsAbs(h) {
			return ""
		}
		return filepath.Join(append([]string{h}, rel...)...)
	}
}
