package hub

import "github.com/agentbridge/agentbridge"

// Recorder keeps what the hub folds, for the bridge's history
// (Options.Recorder). The hub hands it the facts of each commit, under its
// lock and in commit order, once the commit is certain (a push batch that
// is refused hands none): Record must only take them (copy the slice or
// append it to a queue) and never block, call the hub or do I/O.
type Recorder interface {
	Record(facts []Fact)
}

// Fact is one event the hub folded into a session, or a change of a
// session that came without one (a remote's upsert, a session given
// whole: Event.Kind ""), as a Recorder sees it.
type Fact struct {
	Host      string // the remote that reported it; "" for this bridge
	Source    string
	SessionID string
	Harness   string
	// Event is the event as folded (redacted). Its OccurredAt is the time
	// the hub folded it at: the journal's, else the moment the hub read
	// it, else the stamp it gave an agent.done; 0 when none is known (an
	// undated record found by a scan).
	Event agentbridge.Event
	// Fresh marks the first event of a session built from nothing (a new
	// session, a scan, a journal read again): what its journal said before
	// is told again from here on, so a recorder replaces what it kept of
	// the session from journal events.
	Fresh bool
	// Hook marks an event a hook made (not told again by a scan).
	Hook bool
	// The session after the fact.
	Model string
	Cwd   string
	Title string
	Usage agentbridge.Usage  // its token totals
	Ended *agentbridge.Ended // shared: do not change it
}
