package claudecode

import (
	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// ---- subagent transcripts ----

// Child joins a subagent transcript (agent-<agentID>.jsonl, 2.1.2+ layout)
// to this session. toolUseID, agentType and description come from its
// .meta.json sidecar when there is one. It returns the subagent id the
// child is shown as and whether the child's own transcript must tell when
// it ends (own); a child joined to the parent's Agent/Task tool_use ends
// with that tool's result instead and gives no events here.
//
// Join order: the sidecar's toolUseId (the parent's tool_use starts and
// ends the subagent under that id, whenever it is read); else an agentId the parent's tool results named; else, while one of the
// parent's Agent/Task tools is still open and unjoined, that one (no event:
// ambiguous but never a duplicate); else the child becomes a subagent of
// its own, "agent-<agentID>", kept across turns until its transcript ends.
func (m *Mapper) Child(agentID, toolUseID, agentType, description string, at int64) (evs []agentbridge.Event, subID string, own bool) {
	m.out = m.out[:0]
	m.load()
	aid := validate.SafeID(agentID)
	if id := validate.SafeID(toolUseID); id != "" {
		// The parent's tool_use starts (or started) this subagent under the
		// tool's id; its tool_result ends it.
		if aid != "" {
			m.agents[aid] = id
		}
		if s := m.subs[id]; s != nil {
			s.linked = true
		}
		return nil, id, false
	}
	if id, ok := m.agents[aid]; ok {
		return nil, id, false
	}
	for _, id := range m.subOrder {
		if s := m.subs[id]; !s.linked && !s.async {
			if _, open := m.tools[id]; open {
				return nil, "", false
			}
		}
	}
	subID = validate.SafeID("agent-" + agentID)
	if _, dup := m.everSub[subID]; dup || subID == "" || len(m.subs) >= validate.MaxSubagents {
		return nil, subID, false
	}
	m.ensureStarted()
	m.subs[subID] = &subagent{async: true, linked: true}
	m.subOrder = append(m.subOrder, subID)
	m.everSub[subID] = struct{}{}
	if aid != "" {
		m.agents[aid] = subID
	}
	m.emit(agentbridge.Event{
		Kind: agentbridge.KindSubagentStarted, OccurredAt: at,
		SubagentID: subID, ParentAgentID: m.id,
		Title: text.Display(description, validate.MaxTitle),
		Type:  text.Display(agentType, validate.MaxText),
	})
	return m.done(m.out), subID, true
}

// ChildDone ends a subagent that Child started from its own transcript.
func (m *Mapper) ChildDone(subID string, outcome agentbridge.Outcome, at int64) []agentbridge.Event {
	m.out = m.out[:0]
	m.load()
	m.subDone(subID, outcome, at)
	return m.done(m.out)
}
