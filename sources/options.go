package sources

import (
	"fmt"
	"os"

	"github.com/agentbridge/agentbridge/hub"
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

// RegisterNew is Register for a source package whose constructor takes
// Options as they are (New(o Options) *Source): r.New is set to it.
func RegisterNew[S hub.Source](r Registration, newSource func(Options) S) {
	r.New = func(o Options) hub.Source { return newSource(o) }
	Register(r)
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
