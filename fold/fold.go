// Package fold is where a lifecycle event becomes a snapshot: a Session
// holds one session's state, Session.Apply checks an event (the rules of
// package validate plus the state rules) and folds it, and Session.Hook
// folds the second signal, the agents' hooks, into the same state. The
// Session doc comment is the fold's specification. The fold never reads a
// clock and does no I/O.
package fold

import (
	"fmt"
	"slices"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// The fold's own bounds on what a Session keeps open.
const (
	MaxOpenWaits = 64   // waits open at once in a Session
	MaxOpenTools = 1024 // tools open at once in a Session
)

// Session is one session's state as the fold sees it: its snapshot plus the
// waits, tools and subagents still open, tracked by id. It is the one place
// where a lifecycle event becomes a snapshot change. A Session is not safe
// for concurrent use.
//
// The fold (docs/contract.md section 2), with the choices the contract leaves open:
//
//   - session.started: the session is known. Its status becomes idle and
//     its end is cleared when it had ended (a new process: the dead
//     process's turn is over too, see below) or had no status; otherwise
//     the status and the turn are kept (a source that re-reads a journal
//     must not send a running session back to idle). Given title, model,
//     cwd and pid replace the current ones.
//   - agent.metadata: a given title or model replaces the current one;
//     promptText becomes the title only while there is none (bounded to
//     validate.MaxTitle). agentId changes nothing shown.
//   - turn.started: status running; open waits close (a new prompt
//     supersedes a pending approval or question), except the waits hooks
//     opened after the event's occurredAt; promptText becomes the title
//     while there is none. Open tools stay open.
//   - tool.started: the tool opens; status running, unless a wait is open,
//     in which case the latest open wait's state and reason stay shown.
//     The snapshot's tool is the name of the latest tool still open
//     (bounded to validate.MaxToolName), absent when none is.
//   - tool.finished: the tool closes; a wait a hook opened for that tool
//     closes with it (the tool ran or was refused, so the prompt is over),
//     and so does one known only from a notification opened before the
//     event's occurredAt.
//   - wait.started: the wait opens; status = state, waitingFor = reason
//     (cleared when there is no reason).
//   - wait.finished: the wait closes; when another is still open, the latest
//     open one's state and reason are shown (the latest a hook opened, when
//     there is one), else status running.
//   - agent.done: status idle; lastTurn completed / failed / interrupted
//     from outcome success / error / cancelled; lastTurnEndedAt =
//     occurredAt (0, i.e. absent, when the event has none: the hub stamps
//     occurredAt before applying); error = the summary of a failed turn
//     (bounded to validate.MaxError; absent for any other outcome); open waits and
//     tools close, except the waits hooks opened after occurredAt, which
//     stay shown. Running subagents are left as they are (background
//     agents can outlive a turn).
//   - agent.exited: the session has ended (Ended: occurredAt, exitCode,
//     signal); status idle; open waits and tools close; running subagents
//     become cancelled; waitingFor is cleared. lastTurn and error stay.
//   - subagent.started: adds a running subagent with the event's type
//     (agentbridge.DefaultSubagentType when it has none) and title; its
//     parentId is the event's parentAgentId when that names a listed
//     subagent (a nested one), absent otherwise (under the root session).
//     When validate.MaxSubagents are listed, the oldest finished one makes room;
//     when all of them are running the event is rejected (invalid_array
//     at $.subagentId).
//   - subagent.done: the subagent's status from outcome (success →
//     completed, error → failed, cancelled → cancelled).
//   - session.stopped: Stopped reports true; the hub removes the session.
//   - Events after agent.exited fold as usual: turn.started, tool.started
//     or wait.started bring the session back (a resumed process) and clear
//     its end, session.started makes it idle and clears its end.
//
// The turn a mapper reads (View.InTurn), beside the snapshot: turn.started
// opens it; agent.done ends it; agent.exited does not (the dead process's
// last lines, read after its exit, may still tell how it ended: an
// agent.done then ends it, and the end stays); session.started after
// agent.exited ends it (a new process took the session up: no line of
// the new process goes on with the dead one's turn). View.Exited tells
// whether the process ended, and when: from agent.exited until an event
// clears the end.
//
// Activity (Session.Activity), beside the snapshot and folded with it:
//
//   - statusSince: the occurredAt of the event that changed the status (a
//     new session's idle: its session.started); when that event had none,
//     the moment the bridge read it live (ApplyRead), else 0 (unknown: a
//     record found at start-up). An event that keeps the status keeps it.
//     turnStartedAt and a tool's since fall back the same way.
//   - tool: the latest tool still open, with its name and the occurredAt of
//     its tool.started.
//   - turnStartedAt: the occurredAt of the turn.started of the turn in
//     progress; cleared by agent.done and agent.exited.
//   - usage: the sum of the token counts sources report on agent.metadata
//     (agentbridge.UsageReport has the counting rules); it survives turns
//     and exits. Usage on any other kind is unknown_field at $.usage, a
//     negative count invalid_integer.
//
// State rules of Apply: wait.finished, tool.finished and subagent.done for
// an id that is not open (unknown, or already closed) are invalid_id at
// $.waitId / $.toolId / $.subagentId; wait.started or tool.started for an
// id already open and subagent.started for a listed id are duplicate; more
// than MaxOpenWaits open waits or MaxOpenTools open tools are
// invalid_array. The fold never reads a clock.
//
// View (view.go) is what a source's mapper reads of the fold: whether a
// turn is open (above), whether and when the process ended, and the open
// tools and running subagents.
//
// Hooks (Session.Hook, hook.go) are the second signal folded here,
// beside the journal's events, so that neither can leave the other's
// state stale.
type Session struct {
	snap    agentbridge.Snapshot
	ended   *agentbridge.Ended // nil: not ended (View.Exited); never changed once set
	waits   []openWait         // open waits, oldest first
	tools   []openTool         // open tools, oldest first
	stopped bool
	inTurn  bool       // a turn.started folded and no agent.done since (View.InTurn)
	hk      *hookState // what hooks told (hook.go); nil until the first hook

	at          int64 // occurredAt of the event being folded, else readAt: for the activity times
	readAt      int64 // when the event being folded was read live (ApplyRead), 0 when unknown
	stamped     bool  // its occurredAt is the hub's stamp, not the agent's (ApplyRead)
	statusSince int64
	turnStarted int64
	usage       *agentbridge.Usage
	counted     []counted // the latest messages counted, oldest first
}

type openTool struct {
	id, name string
	since    int64
}

// counted is one message's counts in the usage sum.
type counted struct {
	id string
	u  agentbridge.Usage
}

// maxCounted bounds the messages remembered for UsageReport.MessageID:
// a message's repeated records come close together.
const maxCounted = 64

type openWait struct {
	id     string
	state  agentbridge.Status
	reason string
	// a wait a hook opened (hook.go): the prompt's key, the tool it
	// is bound to ("" when unknown) and when the hook ran
	hook      bool
	key, tool string
	at        int64
}

// NewSession returns a session known by id and harness, status idle.
func NewSession(id, harness string) *Session {
	return &Session{snap: agentbridge.Snapshot{ID: id, Harness: harness, Status: agentbridge.StatusIdle}}
}

// FromSnapshot returns a session that starts from a snapshot, with no open
// waits, tools or subagents beyond those the snapshot lists as running.
// An empty status becomes idle.
func FromSnapshot(s agentbridge.Snapshot) *Session {
	s = s.Clone()
	if s.Status == "" {
		s.Status = agentbridge.StatusIdle
	}
	return &Session{snap: s}
}

// ID returns the session id.
func (s *Session) ID() string { return s.snap.ID }

// Harness returns the session's harness id.
func (s *Session) Harness() string { return s.snap.Harness }

// PID returns the process id the snapshot shows (0: none).
func (s *Session) PID() int { return s.snap.PID }

// Status returns the status the snapshot shows.
func (s *Session) Status() agentbridge.Status { return s.snap.Status }

// Model returns the model the snapshot shows ("": none). Like the other
// accessors it copies nothing: cheaper than Snapshot for one field.
func (s *Session) Model() string { return s.snap.Model }

// Cwd returns the working directory the snapshot shows ("": none).
func (s *Session) Cwd() string { return s.snap.Cwd }

// Title returns the title the snapshot shows ("": none).
func (s *Session) Title() string { return s.snap.Title }

// Usage returns the session's token totals, Activity's usage, without
// making an Activity; zero when none were reported.
func (s *Session) Usage() agentbridge.Usage {
	if s.usage == nil {
		return agentbridge.Usage{}
	}
	return *s.usage
}

// Snapshot returns a copy of the current snapshot.
func (s *Session) Snapshot() agentbridge.Snapshot { return s.snap.Clone() }

// Ended returns how the session ended, nil while it has not. It is shared:
// do not change it.
func (s *Session) Ended() *agentbridge.Ended { return s.ended }

// Clone returns an independent copy of s.
func (s *Session) Clone() *Session {
	c := *s
	c.snap = s.snap.Clone()
	c.waits = slices.Clone(s.waits)
	c.tools = slices.Clone(s.tools)
	c.counted = slices.Clone(s.counted)
	c.hk = s.hk.clone()
	if s.usage != nil {
		u := *s.usage
		c.usage = &u
	}
	return &c
}

// Activity returns what the session is doing now and what it has used; nil
// when nothing is known.
func (s *Session) Activity() *agentbridge.Activity {
	a := &agentbridge.Activity{StatusSince: s.statusSince, TurnStartedAt: s.turnStarted}
	if n := len(s.tools); n > 0 {
		t := s.tools[n-1]
		a.Tool = &agentbridge.ToolActivity{Name: t.name, Since: t.since}
	}
	if s.usage != nil {
		u := *s.usage
		a.Usage = &u
	}
	if a.IsZero() {
		return nil
	}
	return a
}

// Stopped reports whether a session.stopped event ended the observation.
func (s *Session) Stopped() bool { return s.stopped }

// Apply checks e (Event's rules plus the state rules: wait.finished,
// tool.finished and subagent.done need an open id, …) and, only when there
// is no issue, folds it into the snapshot. The fold is deterministic.
func (s *Session) Apply(e agentbridge.Event) []validate.Issue {
	return s.ApplyRead(e, 0, 0)
}

// ApplyRead is Apply for an event the bridge read at readAt (epoch ms; 0
// when unknown, as for records found at start-up): when the event has no
// occurredAt, readAt stands in for it in the activity times (statusSince,
// turnStartedAt, a tool's since), never in the snapshot, the event or the
// hook rules, which keep to the agent's own clock. stamp, when not 0, is
// the hub's clock stamp for an agent.done without occurredAt: its
// lastTurnEndedAt and its time for the hook rules, but not an activity
// time (a turn found ended at start-up ended at an unknown time).
func (s *Session) ApplyRead(e agentbridge.Event, readAt, stamp int64) []validate.Issue {
	s.readAt = max(readAt, 0)
	if e.OccurredAt == 0 && e.Kind == agentbridge.KindAgentDone && stamp > 0 {
		e.OccurredAt = stamp
		s.stamped = true
	}
	defer func() { s.readAt, s.stamped = 0, false }()
	is := validate.Event(e)
	is = usageIssues(is, &e)
	is = s.stateIssues(is, &e)
	if len(is) > 0 {
		return is
	}
	s.fold(&e)
	return nil
}

// newIssue is one issue of the fold's rules, in validate's form.
func newIssue(p string, c validate.Code, format string, args ...any) validate.Issue {
	return validate.Issue{Path: p, Code: c, Message: fmt.Sprintf(format, args...)}
}

func usageIssues(is []validate.Issue, e *agentbridge.Event) []validate.Issue {
	u := e.Usage
	switch {
	case u == nil:
	case e.Kind != agentbridge.KindAgentMetadata:
		is = append(is, newIssue("$.usage", validate.UnknownField, "is not a field of a %s event", e.Kind))
	case u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0:
		is = append(is, newIssue("$.usage", validate.InvalidInteger, "token counts must not be negative"))
	}
	return is
}

func (s *Session) toolIndex(id string) int {
	for i := range s.tools {
		if s.tools[i].id == id {
			return i
		}
	}
	return -1
}

func (s *Session) waitIndex(id string) int {
	for i := range s.waits {
		if s.waits[i].id == id {
			return i
		}
	}
	return -1
}

func (s *Session) subagentIndex(id string) int {
	for i := range s.snap.Subagents {
		if s.snap.Subagents[i].ID == id {
			return i
		}
	}
	return -1
}

// evictable returns the index of the oldest finished subagent, or -1.
func (s *Session) evictable() int {
	for i := range s.snap.Subagents {
		if s.snap.Subagents[i].Status != agentbridge.SubagentRunning {
			return i
		}
	}
	return -1
}

func (s *Session) stateIssues(is []validate.Issue, e *agentbridge.Event) []validate.Issue {
	switch e.Kind {
	case agentbridge.KindToolStarted, agentbridge.KindToolFinished:
		if validate.ValidID(e.ToolID) {
			is = openIssues(is, e.Kind == agentbridge.KindToolStarted, "$.toolId", "tool", s.toolIndex(e.ToolID), len(s.tools), MaxOpenTools)
		}
	case agentbridge.KindWaitStarted, agentbridge.KindWaitFinished:
		if validate.ValidID(e.WaitID) {
			is = openIssues(is, e.Kind == agentbridge.KindWaitStarted, "$.waitId", "wait", s.waitIndex(e.WaitID), len(s.waits), MaxOpenWaits)
		}
	case agentbridge.KindSubagentStarted:
		if validate.ValidID(e.SubagentID) {
			if s.subagentIndex(e.SubagentID) >= 0 {
				is = append(is, newIssue("$.subagentId", validate.Duplicate, "names a subagent that is already listed"))
			} else if len(s.snap.Subagents) >= validate.MaxSubagents && s.evictable() < 0 {
				is = append(is, newIssue("$.subagentId", validate.InvalidArray, "would list more than %d running subagents", validate.MaxSubagents))
			}
		}
	case agentbridge.KindSubagentDone:
		if validate.ValidID(e.SubagentID) {
			switch i := s.subagentIndex(e.SubagentID); {
			case i < 0:
				is = append(is, newIssue("$.subagentId", validate.InvalidID, "must name a listed subagent (this one is unknown)"))
			case s.snap.Subagents[i].Status != agentbridge.SubagentRunning:
				is = append(is, newIssue("$.subagentId", validate.InvalidID, "must name a running subagent (this one is already done)"))
			}
		}
	}
	return is
}

// openIssues checks a tool or wait (what) opened (opening) or finished
// under the id at path, whose index among the open ones is index (-1: not
// open): an opened one must not be open yet, and one more than the n open
// must stay within limit; a finished one must be open.
func openIssues(is []validate.Issue, opening bool, path, what string, index, n, limit int) []validate.Issue {
	if !opening {
		if index < 0 {
			return append(is, newIssue(path, validate.InvalidID, "must name an open %s (this one is unknown or already finished)", what))
		}
		return is
	}
	switch {
	case index >= 0:
		return append(is, newIssue(path, validate.Duplicate, "names a %s that is already open", what))
	case n >= limit:
		return append(is, newIssue(path, validate.InvalidArray, "would open more than %d %ss at once", limit, what))
	}
	return is
}

// setStatus sets the status and clears waitingFor unless the status is
// waiting or blocked, so that the snapshot stays valid.
func (s *Session) setStatus(st agentbridge.Status) {
	if st != s.snap.Status {
		s.statusSince = s.at
	}
	s.snap.Status = st
	if st != agentbridge.StatusWaiting && st != agentbridge.StatusBlocked {
		s.snap.WaitingFor = ""
	}
}

// showWaits shows the latest open wait a hook opened, else the latest
// open wait, or running when none is open: a hook's reason is exact, so a
// journal's guess never hides it.
func (s *Session) showWaits() {
	if len(s.waits) == 0 {
		s.setStatus(agentbridge.StatusRunning)
		return
	}
	w := s.waits[len(s.waits)-1]
	for i := len(s.waits) - 1; i >= 0; i-- {
		if s.waits[i].hook {
			w = s.waits[i]
			break
		}
	}
	s.setStatus(w.state)
	s.snap.WaitingFor = w.reason
}

func (s *Session) closeAll() {
	s.waits = nil
	s.tools = nil
	s.turnStarted = 0
}

// count adds a usage report to the sum.
func (s *Session) count(r *agentbridge.UsageReport) {
	sum := agentbridge.Usage{}
	if s.usage != nil {
		sum = *s.usage
	}
	switch {
	case r.Total:
		sum, s.counted = r.Usage, nil
	case r.MessageID != "":
		i := slices.IndexFunc(s.counted, func(c counted) bool { return c.id == r.MessageID })
		if i >= 0 {
			sum = sum.Sub(s.counted[i].u)
			s.counted[i].u = r.Usage
		} else {
			if len(s.counted) >= maxCounted {
				s.counted = slices.Delete(s.counted, 0, 1)
			}
			s.counted = append(s.counted, counted{r.MessageID, r.Usage})
		}
		sum = sum.Add(r.Usage)
	default:
		sum = sum.Add(r.Usage)
	}
	s.usage = &sum
}

func (s *Session) titleFromPrompt(prompt string) {
	if s.snap.Title == "" && prompt != "" {
		s.snap.Title = text.Bound(prompt, validate.MaxTitle)
	}
}

var lastTurnOf = map[agentbridge.Outcome]agentbridge.LastTurn{
	agentbridge.OutcomeSuccess:   agentbridge.LastTurnCompleted,
	agentbridge.OutcomeError:     agentbridge.LastTurnFailed,
	agentbridge.OutcomeCancelled: agentbridge.LastTurnInterrupted,
}

var subagentStatusOf = map[agentbridge.Outcome]agentbridge.SubagentStatus{
	agentbridge.OutcomeSuccess:   agentbridge.SubagentCompleted,
	agentbridge.OutcomeError:     agentbridge.SubagentFailed,
	agentbridge.OutcomeCancelled: agentbridge.SubagentCancelled,
}

// fold applies a checked event.
func (s *Session) fold(e *agentbridge.Event) {
	s.at = e.OccurredAt
	if s.at == 0 || s.stamped {
		s.at = s.readAt
	}
	defer s.showTool()
	switch e.Kind {
	case agentbridge.KindTurnStarted, agentbridge.KindToolStarted, agentbridge.KindWaitStarted:
		s.ended = nil // a resumed process
	}
	switch e.Kind {
	case agentbridge.KindSessionStarted:
		if s.snap.Status == "" || s.ended != nil {
			s.closeAll()
			s.ended = nil
			s.inTurn = false // a new process: the dead one's turn is over
			s.statusSince = s.at
			s.setStatus(agentbridge.StatusIdle)
		}
		if s.snap.Status == agentbridge.StatusIdle && s.statusSince == 0 {
			s.statusSince = s.at
		}
		setIf(&s.snap.Title, e.Title)
		setIf(&s.snap.Model, e.Model)
		setIf(&s.snap.Cwd, e.Cwd)
		if e.PID != 0 {
			s.snap.PID = e.PID
		}
	case agentbridge.KindAgentMetadata:
		setIf(&s.snap.Title, e.Title)
		setIf(&s.snap.Model, e.Model)
		s.titleFromPrompt(e.PromptText)
		if e.Usage != nil {
			s.count(e.Usage)
		}
	case agentbridge.KindTurnStarted:
		s.waits = s.newerHookWaits(e.OccurredAt)
		s.hk.fenceAt(e.OccurredAt)
		s.showWaits()
		s.turnStarted = s.at
		s.inTurn = true
		s.titleFromPrompt(e.PromptText)
	case agentbridge.KindToolStarted:
		s.tools = append(s.tools, openTool{e.ToolID, e.Name, s.at})
		s.showWaits()
	case agentbridge.KindToolFinished:
		s.tools = slices.Delete(s.tools, s.toolIndex(e.ToolID), s.toolIndex(e.ToolID)+1)
		if s.hk != nil {
			s.hk.settle("", e.ToolID, e.OccurredAt)
			if s.closeHookWaits(func(w *openWait) bool {
				return w.tool == e.ToolID || w.key == HookNotified && e.OccurredAt != 0 && w.at <= e.OccurredAt
			}) {
				s.showWaits()
			}
		}
	case agentbridge.KindWaitStarted:
		s.waits = append(s.waits, openWait{id: e.WaitID, state: e.State, reason: text.Bound(e.Reason, validate.MaxWaitingFor)})
		s.showWaits()
	case agentbridge.KindWaitFinished:
		i := s.waitIndex(e.WaitID)
		s.waits = append(s.waits[:i], s.waits[i+1:]...)
		s.showWaits()
	case agentbridge.KindAgentDone:
		keep := s.newerHookWaits(e.OccurredAt)
		s.closeAll()
		s.inTurn = false
		s.hk.fenceAt(e.OccurredAt)
		s.setStatus(agentbridge.StatusIdle)
		s.statusSince = s.at // a turn's end is a new idle, even from idle
		s.snap.LastTurn = lastTurnOf[e.Outcome]
		s.snap.LastTurnEndedAt = e.OccurredAt
		s.snap.Error = ""
		if e.Outcome == agentbridge.OutcomeError {
			s.snap.Error = text.Bound(e.Summary, validate.MaxError)
		}
		if len(keep) > 0 {
			s.waits = keep
			s.showWaits()
		}
	case agentbridge.KindAgentExited:
		s.closeAll()
		s.hk.fenceAt(e.OccurredAt)
		s.setStatus(agentbridge.StatusIdle)
		s.statusSince = s.at
		s.ended = &agentbridge.Ended{At: e.OccurredAt, Signal: e.Signal}
		if e.ExitCode != nil {
			c := *e.ExitCode
			s.ended.ExitCode = &c
		}
		var subs []agentbridge.Subagent // copy: never touch a shared array
		for i := range s.snap.Subagents {
			if s.snap.Subagents[i].Status == agentbridge.SubagentRunning {
				if subs == nil {
					subs = append(subs, s.snap.Subagents...)
				}
				subs[i].Status = agentbridge.SubagentCancelled
			}
		}
		if subs != nil {
			s.snap.Subagents = subs
		}
	case agentbridge.KindSubagentStarted:
		subs := s.snap.Subagents
		if len(subs) >= validate.MaxSubagents {
			i := s.evictable()
			subs = append(subs[:i:i], subs[i+1:]...) // copy: never touch a shared array
		}
		typ := e.Type
		if typ == "" {
			typ = agentbridge.DefaultSubagentType
		}
		parent := ""
		if e.ParentAgentID != e.SubagentID && s.subagentIndex(e.ParentAgentID) >= 0 {
			parent = e.ParentAgentID
		}
		s.snap.Subagents = append(subs, agentbridge.Subagent{
			ID: e.SubagentID, ParentID: parent, Type: typ, Title: e.Title, Status: agentbridge.SubagentRunning,
		})
	case agentbridge.KindSubagentDone:
		i := s.subagentIndex(e.SubagentID)
		subs := append([]agentbridge.Subagent(nil), s.snap.Subagents...)
		subs[i].Status = subagentStatusOf[e.Outcome]
		s.snap.Subagents = subs
	case agentbridge.KindSessionStopped:
		s.stopped = true
	}
}

// showTool shows the latest open tool's name, or none.
func (s *Session) showTool() {
	s.snap.Tool = ""
	if n := len(s.tools); n > 0 {
		s.snap.Tool = text.Bound(s.tools[n-1].name, validate.MaxToolName)
	}
}

func setIf(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}
