package sources

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/agentbridge/agentbridge"
)

// Follow returns the FollowConfig of a source made with o that follows
// the journals tail picks: tail with o's Window and MaxLine, and o's Linger and
// Logger. A source adds what else it needs (RootsFor, Agent, OnTailer) to
// the result.
func (o Options) Follow(tail TailConfig) FollowConfig {
	tail.Window = o.Window
	tail.MaxLine = o.MaxLine
	return FollowConfig{Tail: tail, Linger: o.Linger, Logger: o.Logger, Processes: o.Processes}
}

// DefaultHome returns the home of the registered source id as the server
// would resolve it with no configuration: its agent's variable when that
// is absolute, else its default below $HOME. An error says there is none.
func DefaultHome(id string) (string, error) {
	r, ok := Lookup(id)
	if !ok {
		return "", fmt.Errorf("source %q is not registered", id)
	}
	if h := r.ResolveHome("", os.Getenv); h != "" {
		return h, nil
	}
	return "", fmt.Errorf("%s home: neither %s nor HOME names one", id, r.HomeEnv)
}

// Single describes a built-in source: what its Info says and what
// RegisterAgent registers, so that a source package spells out only what
// is its own. Most sources have one harness (Harness); a source with more
// lists them (Harnesses).
type Single struct {
	// ID and DisplayName are the source's (agentbridge.SourceInfo).
	ID, DisplayName string
	// Harness is the id of the source's one harness, HarnessName its
	// display name; empty means the source's DisplayName.
	Harness, HarnessName string
	// Harnesses, when set, are the harnesses of a source with more than
	// one (gemini: Gemini CLI and Antigravity CLI under one home), in the
	// order Info lists them; Harness and HarnessName are then unused.
	Harnesses []agentbridge.Harness
	// HomeEnv is the agent's own variable naming its home
	// (Registration.HomeEnv), empty when it has none; it is the first of
	// the environment variables the source reads.
	HomeEnv string
	// Env are the other environment variables the source reads.
	Env []string
	// DefaultHome is Registration.DefaultHome (HomeUnder(…) for most).
	DefaultHome func(getenv func(string) string) string
	// Observes is what the source can know, and from where.
	Observes map[string]agentbridge.Observe
	// Hooks is the agent's hook vocabulary (Registration.Hooks), nil for
	// none.
	Hooks *Hooks
}

// Info returns the source's description. Each call returns its own
// Observes map and environment list (never nil: [] in JSON).
func (d Single) Info() agentbridge.SourceInfo {
	env := make([]string, 0, 1+len(d.Env))
	if d.HomeEnv != "" {
		env = append(env, d.HomeEnv)
	}
	hs := slices.Clone(d.Harnesses)
	if hs == nil {
		hs = []agentbridge.Harness{{ID: d.Harness, DisplayName: cmp.Or(d.HarnessName, d.DisplayName)}}
	}
	return agentbridge.SourceInfo{
		ID:                   d.ID,
		DisplayName:          d.DisplayName,
		Harnesses:            hs,
		EnvironmentVariables: append(env, d.Env...),
		Observes:             maps.Clone(d.Observes),
	}
}
