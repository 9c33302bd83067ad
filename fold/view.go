package fold

import "github.com/agentbridge/agentbridge"

// View is the read-only part of a session's fold that a source's mapper
// reads to interpret the next line of the session's journal: whether a
// turn is open, whether the process ended, and which tools and subagents
// the journal's events opened and have not closed. A mapper keeps only what the journal's format
// needs (ids to interpret later lines, a cwd, …) and takes this state
// from the fold, so that the two cannot drift apart (an agent.exited the
// bridge folds when the process ends closes tools the journal never
// closes).
//
// A View holds only what journal events change, never what hooks fold
// (open waits, the status): no hook changes the turn, the open tools or
// the running subagents, so a mapper reads the journal's state alone.
// (That is not what makes it safe to read while hooks come in: the hub
// folds a hook into a copy of the session, never into one a source was
// handed; see hub.Sink.)
type View interface {
	// InTurn reports whether a turn.started was folded and no agent.done
	// since, nor a session.started after an agent.exited. agent.exited
	// does not end it: the journal may still tell how the turn ended (its
	// last lines read after the process's exit). session.started after it
	// does: a new process took the session up (a resumed session), and a
	// line of its own that no prompt opened is not the dead turn's.
	InTurn() bool
	// Exited reports whether the session's process ended (agent.exited
	// folded, and no session.started, turn.started, tool.started or
	// wait.started since, which a new process brings), and at when: the
	// agent.exited's occurredAt (epoch ms; the hub stamps one when the
	// source gave none), 0 when unknown.
	Exited() (at int64, ok bool)
	// OpenTools appends the ids of the open tools to dst, oldest first.
	OpenTools(dst []string) []string
	// ToolOpen reports whether tool id is open.
	ToolOpen(id string) bool
	// SubagentRunning reports whether subagent id is listed and running.
	SubagentRunning(id string) bool
	// RunningSubagents appends the ids of the running subagents to dst,
	// oldest first.
	RunningSubagents(dst []string) []string
}

// ViewOf returns the view of s; a nil s is the view of a session not
// known yet: no turn, nothing open.
func ViewOf(s *Session) View {
	if s == nil {
		return empty{}
	}
	return s
}

// empty is the view of a session not known yet.
type empty struct{}

func (empty) InTurn() bool                    { return false }
func (empty) Exited() (int64, bool)           { return 0, false }
func (empty) OpenTools(dst []string) []string { return dst }
func (empty) ToolOpen(string) bool            { return false }
func (empty) SubagentRunning(string) bool     { return false }

func (empty) RunningSubagents(dst []string) []string { return dst }

// InTurn implements View.
func (s *Session) InTurn() bool { return s.inTurn }

// Exited implements View.
func (s *Session) Exited() (at int64, ok bool) {
	if s.ended == nil {
		return 0, false
	}
	return s.ended.At, true
}

// OpenTools implements View.
func (s *Session) OpenTools(dst []string) []string {
	for _, t := range s.tools {
		dst = append(dst, t.id)
	}
	return dst
}

// ToolOpen implements View.
func (s *Session) ToolOpen(id string) bool { return s.toolIndex(id) >= 0 }

// SubagentRunning implements View. It reads the snapshot's subagents
// only, which hooks never change.
func (s *Session) SubagentRunning(id string) bool {
	i := s.subagentIndex(id)
	return i >= 0 && s.snap.Subagents[i].Status == agentbridge.SubagentRunning
}

// RunningSubagents implements View. It reads the snapshot's subagents
// only, which hooks never change.
func (s *Session) RunningSubagents(dst []string) []string {
	for i := range s.snap.Subagents {
		if s.snap.Subagents[i].Status == agentbridge.SubagentRunning {
			dst = append(dst, s.snap.Subagents[i].ID)
		}
	}
	return dst
}
