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
// whole: Event.Kind ""), as a Recorder sees it; a session a source
// removes without a session.stopped (Sink.Remove, a push source's remove,
// a reset that leaves it out) is told as a session.stopped the hub makes
// at its clock.
type Fact struct {
	Host      string // the remote that reported it; "" for this bridge
	Source    string
	SessionID string
	Harness   string
	// Event is the event as folded (redacted). Its OccurredAt is the time
	// the hub folded it at: the journal's, else the moment the hub read
	// it, else the stamp it gave an agent.done; 0 when none is known (an
	// undated record found by a scan). A session that came without an
	// event (Kind "") has the moment the hub took it.
	Event agentbridge.Event
	// Fresh marks the first event of a session a journal source builds
	// from nothing and tells from its start (each session of a scan, a
	// journal read again after Restart, a session first folded in this
	// run): what its journal said before is told again from here on, so a
	// recorder replaces what it kept of the session from journal events.
	// A session that comes back after it left in this run, and every
	// session of a push source, is never Fresh (see freshFold).
	Fresh bool
	// Recount marks the first fact of a fold built anew that is not Fresh
	// (a session that comes back after it left, a session given whole
	// from a snapshot): its Usage counts from zero again here, while what
	// the session used before it stays used. (A usage report with Total
	// set makes Usage the session's totals, whatever the fold.)
	Recount bool
	// Hook marks an event a hook made (not told again by a scan).
	Hook bool
	// The session after the fact.
	Model string
	Cwd   string
	Title string
	// Status is the session's status after the fact: a recorder closes
	// the waits it holds open when it is neither waiting nor blocked (the
	// fold closes a hook's wait when the journal shows the agent went on,
	// with no wait.finished).
	Status agentbridge.Status
	Usage  agentbridge.Usage  // its token totals
	Ended  *agentbridge.Ended // shared: do not change it
}

// The tap: where the facts are made and handed out. A publisher collects
// the facts of what it folds in p.facts (only when the hub has a
// recorder), in fold order; publisher.flush moves them to the transaction
// that commits them, and Hub.commit hands them to the recorder. Facts of
// a scan wait for the scan's commit and go with a scan that is dropped;
// those of a push batch go with its transaction when it is refused; those
// of a source that is shutting down are dropped with its records.

// maxTold bounds the sessions a publisher remembers folding (freshFold);
// past it a session that comes back after it left is told as Fresh, and a
// recorder replaces what it kept of it.
const maxTold = 1 << 17

// freshFold reports whether a fold made now from nothing for session id
// starts the session's journal again from its start (Fact.Fresh): always
// in a scan, otherwise only the first time this run folds the session. A
// session that left and comes back (its journal written again after it
// stopped, or after Remove) is read on from where its tailer was, so its
// new fold tells only what is new. A push source's sessions are never
// told again: none of its folds is Fresh. p.mu must be held.
func (p *publisher) freshFold(id string) bool {
	if !p.rebuilds || p.h.rec == nil {
		return false
	}
	if p.scan != nil {
		return true
	}
	_, told := p.told[id]
	return !told
}

// record notes the fact of e, just folded into w at at (by a hook when
// hook), with the session as the fold leaves it; the first fact of a fold
// built from nothing is Fresh, or Recount when it does not tell the
// session again. p.mu must be held and the hub must have a recorder.
func (p *publisher) record(w *work, e *agentbridge.Event, at int64, hook bool) {
	f := w.fold
	p.facts = append(p.facts, Fact{Source: p.src.info.ID, SessionID: w.id, Harness: w.harness, Event: *e,
		Fresh: w.fresh, Recount: w.anew && !w.fresh, Hook: hook,
		Status: f.Status(), Model: f.Model(), Cwd: f.Cwd(), Title: f.Title(), Usage: f.Usage(), Ended: f.Ended()})
	p.facts[len(p.facts)-1].Event.OccurredAt = at
	first := w.anew // a fold's first fact: note the session once, not per event
	w.fresh, w.anew = false, false
	if first && p.rebuilds && len(p.told) < maxTold {
		if p.told == nil {
			p.told = map[string]struct{}{}
		}
		p.told[w.id] = struct{}{}
	}
}

// recordLeft notes that w leaves the store without having stopped
// (Remove, a push source's remove, a reset without it): the fact of a session.stopped the hub
// makes at its clock, so that a recorder ends the turn and waits it holds
// open, as the session's own session.stopped would have. It is never
// Fresh: a journal read again (Restart) and gone before it told anything
// tells nothing again, so the recorder keeps what it holds (the empty
// fold's fact is Recount). p.mu must be held and the hub must have a
// recorder.
func (p *publisher) recordLeft(w *work) {
	if w.fold == nil || w.fold.Stopped() {
		return
	}
	w.fresh = false
	e := agentbridge.Event{Kind: agentbridge.KindSessionStopped}
	p.record(w, &e, p.h.now().UnixMilli(), false)
}

// recordWhole notes the fact of w, a session given whole (its shown
// snapshot, activity and end), taken at the hub's clock; Recount when its
// fold was just built from the snapshot (anew). p.mu and the hub's lock
// must be held and the hub must have a recorder.
func (p *publisher) recordWhole(w *work, anew bool) {
	p.facts = append(p.facts, wholeFact("", p.src.info.ID, w.shown, w.shownAct, w.shownEnded, p.h.now().UnixMilli()))
	p.facts[len(p.facts)-1].Recount = anew
}

// wholeFact is the fact of a session that came without an event (given
// whole, a remote's upsert or reset), at at: Event.Kind "".
func wholeFact(host, source string, snap *agentbridge.Snapshot, act *agentbridge.Activity, ended *agentbridge.Ended, at int64) Fact {
	var u agentbridge.Usage
	if act != nil && act.Usage != nil {
		u = *act.Usage
	}
	return Fact{Host: host, Source: source, SessionID: snap.ID, Harness: snap.Harness, Event: agentbridge.Event{OccurredAt: at},
		Status: snap.Status, Model: snap.Model, Cwd: snap.Cwd, Title: snap.Title, Usage: u, Ended: ended}
}

// foldedAt is the time an event was folded at: its own, else the moment
// it was read, else the hub's stamp of an agent.done; 0 when none is
// known.
func foldedAt(own, readAt, stamp int64) int64 {
	switch {
	case own != 0:
		return own
	case readAt != 0:
		return readAt
	}
	return stamp
}

// hand moves the facts collected so far to t, which hands them to the
// recorder when it is committed; a scan's wait for the commit that ends
// it (ending). p.mu and the hub's lock must be held.
func (p *publisher) hand(t *txn, ending bool) {
	if len(p.facts) == 0 || p.scan != nil && !ending {
		return
	}
	if len(t.facts) == 0 { // the publisher's buffer: commit gives it back
		t.facts, p.facts = p.facts, t.facts[:0]
		return
	}
	t.facts = append(t.facts, p.facts...)
	p.dropFacts()
}

// maxScanFacts is how many facts a scan holds before it hands them out
// (spillScan); it also bounds the buffer a publisher keeps for its facts
// between commits.
const maxScanFacts = 4096

// spillScan hands the facts a scan holds to the recorder before the scan
// ends: a start-up scan of a large home would otherwise hold every fact
// of every journal it reads until its end. What a scan tells is told from
// each journal's start (Fresh), so a scan dropped after this (Rescan,
// Reset) leaves nothing a recorder keeps wrong: the scan that replaces it
// tells each of its sessions again. p.mu must be held, the hub's lock not.
func (p *publisher) spillScan() {
	h := p.h
	h.mu.Lock()
	if p.src.ctx.Err() == nil {
		h.rec.Record(p.facts)
	}
	h.mu.Unlock()
	p.dropFacts()
}

// dropFacts forgets the facts collected so far (a scan dropped, a source
// shutting down) and keeps the buffer. p.mu must be held.
func (p *publisher) dropFacts() {
	clear(p.facts)
	p.facts = p.facts[:0]
}

// record hands t's facts to the recorder: t is being committed. h.mu must
// be held.
func (h *Hub) record(t *txn) {
	if len(t.facts) == 0 || h.rec == nil {
		return
	}
	h.rec.Record(t.facts)
	clear(t.facts) // Record copied what it keeps
	t.facts = t.facts[:0]
}
