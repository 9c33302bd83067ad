package validate

import "github.com/agentbridge/agentbridge"

// Session is one session's state as the fold sees it: its snapshot plus the
// waits, tools and subagents still open, tracked by id. It is the one place
// where a lifecycle event becomes a snapshot change. A Session is not safe
// for concurrent use.
type Session struct {
	// unexported state; see Apply
}

// NewSession returns a session known by id and harness, status idle.
func NewSession(id, harness string) *Session { panic("todo") }

// FromSnapshot returns a session that starts from a snapshot, with no open
// waits, tools or subagents beyond those the snapshot lists as running.
func FromSnapshot(s agentbridge.Snapshot) *Session { panic("todo") }

// Apply checks e (Event's rules plus the state rules: wait.finished,
// tool.finished and subagent.done need an open id, …) and, only when there
// is no issue, folds it into the snapshot. The fold is deterministic.
func (s *Session) Apply(e agentbridge.Event) []Issue { panic("todo") }

// Snapshot returns a copy of the current snapshot.
func (s *Session) Snapshot() agentbridge.Snapshot { panic("todo") }

// Clone returns an independent copy of s.
func (s *Session) Clone() *Session { panic("todo") }

// Stopped reports whether a session.stopped event ended the observation.
func (s *Session) Stopped() bool { panic("todo") }
