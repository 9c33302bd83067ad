package history

import (
	"unsafe"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// queued is a fact as the writer's queue keeps it: only what the writer
// reads, its strings shared with the fact's (never copied), and the
// session's part (who) shared by the facts that follow each other in one
// session. A hub.Fact is about 500 bytes and keeps the whole
// event alive (a prompt's text, a summary); a queued fact is 128 bytes in
// its item and keeps only the ids, name, reason and outcome it uses.
type queued struct {
	who     *factSession
	ended   *agentbridge.Ended // shared with the hub: never changed
	at      int64              // Event.OccurredAt
	usage   agentbridge.Usage  // the session's totals after the fact
	id      string             // TurnID, ToolID or WaitID
	text    string             // Name (tool.started), Reason (wait.started)
	word    string             // Outcome (agent.done, tool.finished), State (wait.started)
	kind    factKind
	closes  bool // the session is neither waiting nor blocked after it
	fresh   bool
	recount bool // hub.Fact.Recount: the fold's totals count from zero again
	total   bool // the event's usage report gives the session's totals (UsageReport.Total)
	hook    bool
}

// factSession is the part of a fact that names the session and says what
// it is after the fact; the facts of a session that follow each other
// share it until one of them changes it.
type factSession struct {
	host, source, id, harness, model, cwd, title string
}

// factKind is the kind of a fact's event, as far as the writer tells them
// apart.
type factKind uint8

const (
	kindNone  factKind = iota // no event: a session given whole
	kindOther                 // an event the writer folds no row from
	kindTurnStarted
	kindAgentDone
	kindAgentExited
	kindSessionStopped
	kindToolStarted
	kindToolFinished
	kindWaitStarted
	kindWaitFinished
)

// Sizes for the queue's memory bound: an item per fact, a factSession per
// run of a session's facts, and the bytes of the strings they hold (shared
// with the hub's, so an upper bound of what the queue keeps alive).
const (
	itemSize    = int(unsafe.Sizeof(item{}))
	sessionSize = int(unsafe.Sizeof(factSession{}))
)

// handOutSize is the memory facts take once queued by queue after a fact
// of session part prev (nil: none).
func handOutSize(prev *factSession, facts []hub.Fact) int {
	var part factSession
	have := prev != nil
	if have {
		part = *prev
	}
	n := 0
	for i := range facts {
		f := &facts[i]
		n += itemSize
		if !have || !part.is(f) {
			part, have = sessionOf(f), true
			n += sessionSize + len(part.host) + len(part.source) + len(part.id) + len(part.harness) + len(part.model) + len(part.cwd) + len(part.title)
		}
		id, text, word := eventStrings(&f.Event)
		n += len(id) + len(text) + len(word)
	}
	return n
}

// queue appends facts to q as queued facts, the first sharing the session
// part prev (nil: none) when it is the same, and returns q and the last
// fact's session part (handOutSize says their memory).
func queue(q []item, prev *factSession, facts []hub.Fact) ([]item, *factSession) {
	who := prev
	for i := range facts {
		f := &facts[i]
		if who == nil || !who.is(f) {
			p := sessionOf(f)
			who = &p
		}
		id, text, word := eventStrings(&f.Event)
		q = append(q, item{fact: queued{who: who, ended: f.Ended, at: f.Event.OccurredAt, usage: f.Usage,
			id: id, text: text, word: word, kind: kindOf(f.Event.Kind), fresh: f.Fresh, recount: f.Recount, hook: f.Hook,
			total:  f.Event.Usage != nil && f.Event.Usage.Total,
			closes: f.Status != "" && f.Status != agentbridge.StatusWaiting && f.Status != agentbridge.StatusBlocked}})
	}
	return q, who
}

// sessionOf is the session part of f, its strings shared.
func sessionOf(f *hub.Fact) factSession {
	return factSession{host: f.Host, source: f.Source, id: f.SessionID, harness: f.Harness, model: f.Model, cwd: f.Cwd, title: f.Title}
}

// is reports whether f has the session part p. Strings the hub hands
// again share their bytes, so each comparison of equal strings is a
// length and a pointer.
func (p *factSession) is(f *hub.Fact) bool {
	return p.id == f.SessionID && p.source == f.Source && p.host == f.Host && p.harness == f.Harness &&
		p.model == f.Model && p.cwd == f.Cwd && p.title == f.Title
}

// eventStrings are the strings of an event the writer keeps.
func eventStrings(e *agentbridge.Event) (id, text, word string) {
	switch e.Kind {
	case agentbridge.KindTurnStarted:
		return e.TurnID, "", ""
	case agentbridge.KindAgentDone:
		return "", "", string(e.Outcome)
	case agentbridge.KindToolStarted:
		return e.ToolID, e.Name, ""
	case agentbridge.KindToolFinished:
		return e.ToolID, "", string(e.Outcome)
	case agentbridge.KindWaitStarted:
		return e.WaitID, e.Reason, string(e.State)
	case agentbridge.KindWaitFinished:
		return e.WaitID, "", ""
	}
	return "", "", ""
}

func kindOf(k agentbridge.EventKind) factKind {
	switch k {
	case "":
		return kindNone
	case agentbridge.KindTurnStarted:
		return kindTurnStarted
	case agentbridge.KindAgentDone:
		return kindAgentDone
	case agentbridge.KindAgentExited:
		return kindAgentExited
	case agentbridge.KindSessionStopped:
		return kindSessionStopped
	case agentbridge.KindToolStarted:
		return kindToolStarted
	case agentbridge.KindToolFinished:
		return kindToolFinished
	case agentbridge.KindWaitStarted:
		return kindWaitStarted
	case agentbridge.KindWaitFinished:
		return kindWaitFinished
	}
	return kindOther
}

func (f *queued) key() sessionKey { return sessionKey{f.who.host, f.who.source, f.who.id} }
