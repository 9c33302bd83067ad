package hub

import (
	"maps"
	"slices"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/validate"
)

// The store's way out: what a publisher folded reaches the hub through
// one transaction (txn, Hub.commit), whichever intake folded it.

// commit publishes the pending records and upserts; all ends every
// batch (Flush): a scan and sessions being built aside are committed only
// then. p.mu must be held.
func (p *publisher) commit(all bool) {
	facts := len(p.facts) > 0 && (p.scan == nil || all) // a scan's wait for its end
	if len(p.pend) == 0 && len(p.dirty) == 0 && !facts && !(all && (p.scan != nil || p.show)) {
		return
	}
	scan := all && p.scan != nil
	show := all && p.show
	p.show = false
	ready := p.prepare(all) // outside the hub's lock

	h := p.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.src.ctx.Err() != nil {
		clear(p.pend)
		p.pend = p.pend[:0]
		p.dropFacts()
		return // shutting down: the host ignores late calls
	}
	t := h.begin(p.src)
	p.flush(t, ready, scan, show)
	h.commit(t)
	if len(p.facts) == 0 && cap(t.facts) > cap(p.facts) && cap(t.facts) <= maxScanFacts {
		p.facts = t.facts[:0] // the buffer flush lent t, emptied by the recorder (a huge one is let go)
	}
}

// prepare makes the snapshots and encodings of the sessions folded since
// the last commit (those being built aside only when all) and returns
// them. p.mu must be held; the hub's lock need not be.
func (p *publisher) prepare(all bool) (ready []*work) {
	keep := p.dirty[:0]
	for _, w := range p.dirty {
		if w.aside && !all {
			keep = append(keep, w)
			continue
		}
		w.dirty, w.aside = false, false
		if p.work[w.id] != w {
			continue // stopped
		}
		w.next = w.fold.Snapshot()
		w.nextAct = w.fold.Activity()
		w.nextEnded = w.fold.Ended()
		redactChanged(&w.next, w.shown)
		w.changed = w.shown == nil || !snapshotEqual(&w.next, w.shown) || !w.nextAct.Equal(w.shownAct) || !w.nextEnded.Equal(w.shownEnded)
		w.data = nil
		if w.changed {
			w.data = encode(upsertData{Source: p.src.info.ID, Snapshot: w.next, Activity: w.nextAct, Ended: w.nextEnded})
		}
		ready = append(ready, w)
	}
	p.dirty = keep
	return ready
}

// drain adds what was folded since the last commit to t (a push batch's
// operation, a Publisher call's held hooks). p.mu and the hub's lock must
// be held.
func (p *publisher) drain(t *txn) {
	if len(p.pend) > 0 || len(p.dirty) > 0 || len(p.facts) > 0 {
		p.flush(t, p.prepare(false), false, false)
	}
}

// flush adds to t the facts collected for the recorder (a scan's only
// when scan), the pending records, in call order, then an upsert of
// every ready session whose snapshot changed; scan ends a scan, show
// answers a Show. p.mu and the hub's lock must be held.
func (p *publisher) flush(t *txn, ready []*work, scan, show bool) {
	p.hand(t, scan)
	pend := p.pend
	p.pend = p.pend[:0]
	for _, w := range ready {
		snap := new(agentbridge.Snapshot)
		*snap = w.next
		w.shown = snap // the latest snapshot, in view or not
		w.shownAct = w.nextAct
		w.shownEnded = w.nextEnded
		if w.ref != nil && w.visible(p.src) {
			w.ref.snap = snap
		}
		w.ref = nil
	}
	for _, o := range pend {
		switch o.kind {
		case opLifecycle:
			if o.ref.snap == nil {
				continue // out of view
			}
			if o.ref.stopped && t.get(o.id) == nil {
				continue // never in view
			}
			t.add(&entry{rec: Record{Name: agentbridge.RecordLifecycle, Data: o.data}, source: p.src.info.ID, sessionID: o.id, snap: o.ref.snap}, nil)
		case opRemove, opHide:
			t.remove(o.id)
		case opDiag:
			t.add(&entry{rec: Record{Name: agentbridge.RecordDiagnostic}, source: p.src.info.ID}, diagData{Source: p.src.info.ID, Diagnostic: o.diag})
		}
	}
	clear(pend)
	for _, w := range ready {
		data := w.data
		w.data, w.next, w.nextAct, w.nextEnded = nil, agentbridge.Snapshot{}, nil, nil
		if !w.visible(p.src) {
			t.remove(w.id)
			continue
		}
		if t.get(w.id) == nil || w.changed {
			t.upsert(w.view(), data)
		}
	}
	if scan {
		p.gone = nil
		for id, w := range p.work {
			if p.scan[id] == nil {
				p.keepStamps(w)
			}
		}
		p.work, p.scan = p.scan, nil
	}
	if scan || show {
		p.replaceInView(t)
	}
}

// replaceInView makes the sessions in view the source's whole state: one
// reset. p.mu and the hub's lock must be held.
func (p *publisher) replaceInView(t *txn) {
	items := make([]*sess, 0, len(p.work))
	ids := make([]string, 0, len(p.work))
	for id, w := range p.work {
		if w.visible(p.src) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		w := p.work[id]
		if w.shown == nil {
			s := w.fold.Snapshot()
			redactChanged(&s, w.shown)
			w.shown = &s
			w.shownAct = w.fold.Activity()
			w.shownEnded = w.fold.Ended()
		}
		items = append(items, w.view())
	}
	if issues := t.opReset("$", items, false); len(issues) > 0 {
		// Cannot happen: the fold keeps its snapshots valid.
		p.h.log.Error("hub: a source's state failed validation", "source", p.src.info.ID, "issues", len(issues))
	}
}

// drop takes the sessions of a harness out of the store (a push source's
// harness switched off: nothing would report them again). p.mu must be
// held.
func (p *publisher) drop(harness string) {
	for id, w := range p.work {
		if w.harness == harness {
			delete(p.work, id)
			p.keepStamps(w)
		}
	}
}

// visible reports whether w is in view: not hidden, its harness on. The
// hub's lock must be held.
func (w *work) visible(s *source) bool { return !w.hidden && s.enabled[w.harness] }

// ---- Publisher: each call commits at once ----

func (p *publisher) Event(sessionID, harness string, e agentbridge.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if issues := p.fold(sessionID, harness, e, intake{prefix: "$", strict: true}); len(issues) > 0 {
		return &InvalidError{Issues: issues}
	}
	p.commit(false) // a scan stays open
	return nil
}

func (p *publisher) Remove(sessionID string) error {
	if issues := idIssues(sessionID, "$.sessionId"); len(issues) > 0 {
		return &InvalidError{Issues: issues}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forget(sessionID)
	p.commit(false) // a scan stays open
	return nil
}

// forget takes a session out of the store (its clock stamps kept), with a
// remove record at the next commit outside a scan; outside a scan a
// recorder is told it stopped (recordLeft). p.mu must be held.
func (p *publisher) forget(id string) {
	if w := p.get(id); w != nil {
		if p.h.rec != nil && p.scan == nil {
			p.recordLeft(w)
		}
		delete(p.cur(), id)
		p.keepStamps(w)
		if w.ref != nil {
			w.ref.snap, w.ref.stopped = w.shown, true
			w.ref = nil
		}
		w.dirty = false
		p.dirty = slices.DeleteFunc(p.dirty, func(d *work) bool { return d == w })
	}
	if p.scan == nil {
		p.pend = append(p.pend, op{kind: opRemove, id: id})
	}
}

func (p *publisher) Diagnostic(d agentbridge.Diagnostic) error {
	validate.RedactDiagnostic(&d)
	if issues := validate.Diagnostic(d); len(issues) > 0 {
		return &InvalidError{Issues: issues}
	}
	if d.Code == agentbridge.CodeFormatDrift {
		p.h.met.drifted(p.src.info.ID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pend = append(p.pend, op{kind: opDiag, diag: d})
	p.commit(false) // a scan and sessions being built aside wait for Flush
	return nil
}

// Reset replaces the source's sessions with copies of the given folds.
func (p *publisher) Reset(sessions []*fold.Session) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropScan() // this replaces whatever a scan was building
	p.commit(true)
	ws := make([]*work, len(sessions))
	for i, s := range sessions {
		if s == nil {
			return &InvalidError{Issues: []validate.Issue{{Path: "$[" + itoa(i) + "]", Code: validate.InvalidType, Message: "session is missing"}}}
		}
		ws[i] = p.adopt(s)
	}
	return p.apply(func(t *txn) []validate.Issue { return p.reset(t, "$", ws, false) })
}

// Upsert replaces one session with a copy of the given fold.
func (p *publisher) Upsert(s *fold.Session) error {
	if s == nil {
		return &InvalidError{Issues: []validate.Issue{{Path: "$", Code: validate.InvalidType, Message: "session is missing"}}}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commit(false)
	w := p.adopt(s)
	return p.apply(func(t *txn) []validate.Issue { return p.put(t, "$", w) })
}

// apply runs one validated operation in its own commit, with what it
// folded (held hooks). p.mu must be held.
func (p *publisher) apply(op func(t *txn) []validate.Issue) error {
	h := p.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.src.ctx.Err() != nil {
		return nil // shutting down: the host ignores late calls
	}
	t := h.begin(p.src)
	issues := op(t)
	if len(issues) == 0 {
		p.drain(t)
	}
	return h.finish(t, issues)
}

// adopt makes a work session from a copy of a source's fold.
func (p *publisher) adopt(s *fold.Session) *work {
	f := s.Clone()
	snap := f.Snapshot()
	validate.RedactSnapshot(&snap)
	return &work{id: f.ID(), harness: f.Harness(), fold: f, shown: &snap, shownAct: f.Activity(), shownEnded: f.Ended()}
}

// pushed makes a work session from a push source's snapshot (its fold is
// made when it is taken).
func pushed(sn agentbridge.Snapshot) *work {
	sn = sn.Clone()
	validate.RedactSnapshot(&sn)
	defaultStatus(&sn)
	return &work{id: sn.ID, harness: sn.Harness, shown: &sn}
}

// take keeps w, a session given whole (adopt, pushed), in the store: its
// fold made from its snapshot when it has none, the clocks of the session
// it replaces kept with their counts (the events that follow are new:
// see Sink), its fact (Event.Kind "", not Fresh; Recount when its fold is made from
// the snapshot) noted for the recorder.
// p.mu and the hub's lock must be held.
func (p *publisher) take(w *work) {
	anew := w.fold == nil
	if anew {
		w.fold = fold.FromSnapshot(*w.shown)
	}
	if old := p.work[w.id]; old != nil {
		w.stamps, w.dones, w.reads, w.undated = old.stamps, old.dones, old.reads, old.undated
	}
	p.fresh(w)
	if p.h.rec != nil {
		p.recordWhole(w, anew)
	}
}

// put validates one session given whole and makes it the session's state:
// an upsert unless a client would see nothing new, then the hooks held
// for it. p.mu and the hub's lock must be held.
func (p *publisher) put(t *txn, prefix string, w *work) []validate.Issue {
	if issues := t.opUpsert(prefix, w.view()); len(issues) > 0 {
		return issues
	}
	p.take(w)
	p.note(w.id)
	p.work[w.id] = w
	p.foldHeld(w)
	return nil
}

// reset validates sessions given whole and makes them the source's whole
// state (strict: at most validate.MaxResetSessions, the contract's limit
// for a push source; otherwise the rest become upserts), then folds the
// hooks held for them. p.mu and the hub's lock must be held.
func (p *publisher) reset(t *txn, prefix string, ws []*work, strict bool) []validate.Issue {
	items := make([]*sess, len(ws))
	for i, w := range ws {
		items[i] = w.view()
	}
	if issues := t.opReset(prefix, items, strict); len(issues) > 0 {
		return issues
	}
	next := make(map[string]*work, len(ws))
	for _, w := range ws {
		p.take(w)
		next[w.id] = w
	}
	if p.h.rec != nil && p.scan == nil { // the sessions the reset leaves out are gone
		for _, id := range slices.Sorted(maps.Keys(p.work)) {
			if next[id] == nil {
				p.recordLeft(p.get(id))
			}
		}
	}
	if p.open != 0 && p.replaced == nil {
		p.replaced = p.work // what a batch that is not kept goes back to
	}
	p.work, p.scan = next, nil
	for _, w := range ws {
		p.foldHeld(w)
	}
	return nil
}
