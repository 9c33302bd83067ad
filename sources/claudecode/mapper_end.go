package claudecode

import (
	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// ---- turn end, exit ----

// closeOpen finishes every open wait and tool and every running foreground
// subagent, as cancelled.
func (m *Mapper) closeOpen(at int64) {
	if m.regWait != "" {
		m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: m.regWait})
		m.regWait = ""
	}
	if m.jobWait != "" {
		m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: m.jobWait})
		m.jobWait = ""
	}
	m.regWaitTool = ""
	for _, id := range m.toolOrder {
		t := m.tools[id]
		if t.wait {
			m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: id})
		}
		m.emit(agentbridge.Event{Kind: agentbridge.KindToolFinished, OccurredAt: at, ToolID: id, Outcome: agentbridge.OutcomeCancelled})
	}
	clear(m.tools)
	m.toolOrder = m.toolOrder[:0]
	for _, id := range append([]string(nil), m.subOrder...) {
		if !m.subs[id].async {
			m.subDone(id, agentbridge.OutcomeCancelled, at)
		}
	}
}

func (m *Mapper) finishTurn(outcome agentbridge.Outcome, summary string, at int64) {
	if m.turn == "" {
		return
	}
	m.closeOpen(at)
	m.emit(agentbridge.Event{Kind: agentbridge.KindAgentDone, OccurredAt: at, Outcome: outcome, Summary: summary})
	m.turn = ""
}

func (m *Mapper) dropTool(id string) {
	delete(m.tools, id)
	for i, t := range m.toolOrder {
		if t == id {
			m.toolOrder = append(m.toolOrder[:i], m.toolOrder[i+1:]...)
			break
		}
	}
}

func (m *Mapper) subDone(id string, outcome agentbridge.Outcome, at int64) {
	if _, ok := m.subs[id]; !ok {
		return
	}
	delete(m.subs, id)
	for i, s := range m.subOrder {
		if s == id {
			m.subOrder = append(m.subOrder[:i], m.subOrder[i+1:]...)
			break
		}
	}
	m.emit(agentbridge.Event{Kind: agentbridge.KindSubagentDone, OccurredAt: at, SubagentID: id, Outcome: outcome})
}

// Gone records when the bound process was seen gone (epoch ms, the
// caller's clock): transcript lines read later but stamped no later were
// written by that process before it died (see LateExit). A new process
// (SetOrigin) clears it.
func (m *Mapper) Gone(at int64) { m.goneAt, m.exitKnown = at, true }

// Exited ends the session's process: every subagent still running is
// cancelled, then agent.exited (which closes open waits and tools). at is
// the time of exit in epoch ms, 0 when unknown; signal is e.g. "SIGKILL".
func (m *Mapper) Exited(at int64, exitCode *int, signal string) []agentbridge.Event {
	m.out = m.out[:0]
	m.load()
	m.exit(at, exitCode, signal)
	return m.done(m.out)
}

// movesStatus reports whether an event kind can take a session out of
// exited.
func movesStatus(k agentbridge.EventKind) bool {
	switch k {
	case agentbridge.KindTurnStarted, agentbridge.KindToolStarted, agentbridge.KindWaitStarted,
		agentbridge.KindWaitFinished, agentbridge.KindAgentDone, agentbridge.KindSubagentStarted:
		return true
	}
	return false
}

// exit appends the events of Exited.
func (m *Mapper) exit(at int64, exitCode *int, signal string) {
	m.ensureStarted()
	for _, id := range append([]string(nil), m.subOrder...) {
		m.subDone(id, agentbridge.OutcomeCancelled, at)
	}
	m.endProcess()
	m.emit(agentbridge.Event{Kind: agentbridge.KindAgentExited, OccurredAt: at, ExitCode: exitCode, Signal: signal})
}

// endProcess ends what the mapper keeps of a process that ended, and
// marks the end known (exitKnown). The fold's agent.exited closes the
// tools, subagents and waits, and the view shows the tools and subagents
// closed; the rest is the mapper's: the open turn, which the process's
// late tail (see Gone) goes on under its own id; the waits it opened (the
// registry's, a job's), which a View never shows; the registry's state.
func (m *Mapper) endProcess() {
	m.exitKnown = true
	if m.turn != "" {
		m.exitTurn, m.turn = m.turn, ""
	}
	m.regWait, m.regWaitTool, m.jobWait = "", "", ""
	m.reg = RegistryState{}
	m.lateMoved = false
}

// LateExit ends the session again when lines its exited process wrote,
// read after the exit was seen (Gone), moved it (a turn started or ended):
// call it once those lines are read (at the end of a batch), so that the
// session ends exited with its last turn known. It returns no events
// otherwise.
func (m *Mapper) LateExit() []agentbridge.Event {
	m.out = m.out[:0]
	if !m.lateMoved {
		return nil
	}
	m.load()
	m.exit(0, nil, "")
	return m.done(m.out)
}

// ---- the live registry ----

// RegistryStatus is the status field of a sessions/<pid>.json file.
type RegistryStatus string

// Registry statuses (Claude Code 2.1.x; older builds write none).
const (
	RegistryNone    RegistryStatus = "" // no registry, or one without status
	RegistryBusy    RegistryStatus = "busy"
	RegistryIdle    RegistryStatus = "idle"
	RegistryWaiting RegistryStatus = "waiting"
)

// RegistryState is what the registry says of the session now.
type RegistryState struct {
	Status     RegistryStatus
	WaitingFor string // e.g. "approve Bash"; raw, bounded by the mapper
	// WaitID names the current wait; a new id for each new wait, the same
	// id while one wait lasts (see waitID in registry.go).
	WaitID string
}

// Registry applies what the live registry says. A registry with a status
// observes waits, so inferred waits are closed and no more are opened. A
// "waiting" status opens a wait (state waiting, reason waitingFor) while a
// turn is open (or as soon as one opens); any other status, or a new wait
// id, closes it. Registry never starts or ends a turn: turns come from the
// transcript.
func (m *Mapper) Registry(st RegistryState, at int64) []agentbridge.Event {
	m.out = m.out[:0]
	m.load()
	if st.Status != RegistryNone && m.inferWaits {
		m.inferWaits = false
		for _, id := range m.toolOrder {
			if t := m.tools[id]; t.wait {
				t.wait = false
				m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: id})
			}
		}
	}
	if m.regWait != "" && (st.Status != RegistryWaiting || st.WaitID != m.reg.WaitID) {
		m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: m.regWait})
		m.regWait = ""
	}
	m.reg = st
	if st.Status == RegistryBusy && m.turn != "" {
		m.busySeen = true
	}
	if st.Status == RegistryWaiting && m.regWait == "" && m.turn != "" {
		m.openRegistryWait(at, "")
	}
	return m.done(m.out)
}

// openRegistryWait opens the wait the registry reports. Its reason names
// the pending tool of the transcript when there is one ("Approve Bash:
// touch …/marker"), else it is the registry's own text. suffix makes the
// wait id of a replacement wait differ from the one it replaces.
func (m *Mapper) openRegistryWait(at int64, suffix string) {
	id := m.reg.WaitID
	if id != "" {
		id = validate.SafeID(id + suffix)
	}
	if id == "" || !m.started {
		return
	}
	reason, tool := m.pendingReason()
	if reason == "" {
		reason = text.Display(m.reg.WaitingFor, validate.MaxWaitingFor)
	}
	if reason == "" {
		reason = "input needed"
	}
	m.regWait, m.regWaitTool = id, tool
	m.emit(agentbridge.Event{Kind: agentbridge.KindWaitStarted, OccurredAt: at, WaitID: id, State: agentbridge.StatusWaiting, Reason: reason})
}

// pendingReason describes the newest open tool that is not a subagent —
// the one a permission prompt asks about — and returns it with its id;
// "" when no such tool is open.
func (m *Mapper) pendingReason() (reason, toolID string) {
	for i := len(m.toolOrder) - 1; i >= 0; i-- {
		id := m.toolOrder[i]
		t := m.tools[id]
		if t.subagent {
			continue
		}
		switch t.name {
		case toolAskQuestion:
			return reasonQuestion, id
		case toolExitPlan:
			return reasonPlan, id
		}
		r := "Approve " + t.name
		if t.detail != "" {
			r += ": " + t.detail
		}
		return text.Display(r, validate.MaxWaitingFor), id
	}
	return "", ""
}

// EndIdle ends the turn turnID when it is still open: the registry showed
// the process idle for a while and the transcript wrote no end. That is
// what an Escape before the model's first output leaves (Claude Code
// writes no interrupt marker then and puts the prompt back): the turn is
// cancelled when no reply came, else it completed. at is the time the
// registry went idle (epoch ms).
func (m *Mapper) EndIdle(turnID string, at int64) []agentbridge.Event {
	m.out = m.out[:0]
	if m.turn == "" || m.turn != turnID {
		return nil
	}
	m.load()
	outcome := agentbridge.OutcomeCancelled
	if m.answered {
		outcome = agentbridge.OutcomeSuccess
	}
	m.finishTurn(outcome, "", at)
	return m.done(m.out)
}

// Turn returns the id of the open turn ("" when none).
func (m *Mapper) Turn() string { return m.turn }

// IdleEnds reports whether an idle registry may end the open turn (see
// EndIdle): the registry said busy during it, so idle now means the turn
// is over. Before busy, an idle registry is only the state the process
// was in when the prompt was sent.
func (m *Mapper) IdleEnds() bool { return m.turn != "" && m.busySeen }
