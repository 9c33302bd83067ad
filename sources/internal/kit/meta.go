package kit

import (
	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// Meta remembers what a session's agent.metadata events said: whether the
// title was taken from a prompt yet, and the model last reported. The
// zero value is a session that said nothing.
type Meta struct {
	titled bool
	model  string
}

// FirstTitle returns the agent.metadata event naming the session after
// prompt text when the session has no title from a prompt yet and the
// text gives one (validate.Title), and whether there is such an event.
func (m *Meta) FirstTitle(text string) (agentbridge.Event, bool) {
	t := validate.Title(text)
	if t == "" || m.titled {
		return agentbridge.Event{}, false
	}
	m.titled = true
	return agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Title: t}, true
}

// Model returns the agent.metadata event reporting model when it is a
// model name (validate.Model) other than the one last reported, and
// whether there is such an event.
func (m *Meta) Model(model string) (agentbridge.Event, bool) {
	v := validate.Model(model)
	if v == "" || v == m.model {
		return agentbridge.Event{}, false
	}
	m.model = v
	return agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Model: v}, true
}

// StartTurn adds, through add, the turn.started event of turn id at at,
// then the agent.metadata event FirstTitle gives for the prompt text, if
// any.
func (m *Meta) StartTurn(add func(agentbridge.Event), id string, at int64, text string) {
	add(agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: id, OccurredAt: at})
	if e, ok := m.FirstTitle(text); ok {
		add(e)
	}
}
