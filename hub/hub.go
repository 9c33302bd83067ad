// Package hub orders and validates everything sources report. It is the one
// place where a lifecycle event becomes a snapshot change (through
// fold.Session), where revisions are assigned, and where the bounded ring
// of recent stream records is kept for resuming clients. Sources publish into
// it; the HTTP layer (api, sse) reads from it. It never blocks on a client.
package hub

import (
	"context"
	"errors"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/validate"
)

// Errors callers branch on.
var (
	ErrUnknownSource  = errors.New("hub: unknown source")
	ErrUnknownHarness = errors.New("hub: unknown harness")
	ErrNotPush        = errors.New("hub: source does not take published operations")
	ErrInvalid        = errors.New("hub: invalid operation") // wrapped by *InvalidError
)

// InvalidError carries every issue of a rejected publish; nothing of it was
// applied. errors.Is(err, ErrInvalid) holds.
type InvalidError struct{ Issues []validate.Issue }

func (e *InvalidError) Error() string { return "hub: invalid operation" }
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Source reports the sessions of one agent family.
type Source interface {
	// Info describes the source; it does not change while the hub runs.
	Info() agentbridge.SourceInfo
	// Run reports sessions through st.Publisher until ctx ends, then
	// returns nil. It publishes a reset of the harnesses in st.Enabled first,
	// and a fresh reset after each set received from st.Changes, reporting
	// only switched-on harnesses and releasing the watches of the others.
	Run(ctx context.Context, st Start) error
}

// Start is what a source is given when the hub runs it.
type Start struct {
	Enabled   []string        // harness ids switched on at start
	Changes   <-chan []string // each later enabled set; answer with a reset
	Publisher Sink
}

// Publisher is a source's way into the hub. Every call is validated and
// applied atomically, in call order; a rejected call returns an
// *InvalidError and changes nothing. The hub copies what it keeps.
type Publisher interface {
	// Reset replaces every session the source reported before. The hub takes
	// at most validate.MaxResetSessions in the reset record and streams the
	// rest as upserts.
	Reset(sessions []*fold.Session) error
	// Upsert replaces one session.
	Upsert(s *fold.Session) error
	// Event folds a lifecycle event into a session, creating the session
	// (status idle, with harness) when it is new.
	Event(sessionID, harness string, e agentbridge.Event) error
	// Remove forgets one session.
	Remove(sessionID string) error
	// Diagnostic records a typed problem.
	Diagnostic(d agentbridge.Diagnostic) error
}

// MaxVersionsSeen bounds agentbridge.HarnessState.VersionsSeen; past it
// the versions seen first are dropped.
const MaxVersionsSeen = 32

// Record is one stream event, encoded once for every client that sees it
// unfiltered. Name is one of the agentbridge.Record* names; Data is one
// line of compact JSON, never empty.
type Record struct {
	Rev  uint64
	Name string
	Data []byte
}
