package hub

import (
	"slices"
	"sync"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/validate"
)

// Sink is what a running source is given (Start.Publisher): a Publisher
// whose hub keeps every session the source reports, in view or not, and
// folds each event exactly once. A source keeps no session state of its
// own beyond what binds a session to a process.
//
// Batches. Fold folds at once (its error says whether the fold took the
// event) but its records wait for Flush, which commits, atomically and in
// call order, the lifecycle record of every folded event and then one
// upsert per session whose snapshot changed: a client applying the stream
// stays exact, and a busy session costs one upsert per read of its
// journal, not one per event. A scan (Rescan … Flush) and a journal read
// again (Restart … Flush) are folded aside, out of view, and committed as
// one reset, or one upsert per restarted session, with no lifecycle
// records. The Publisher methods commit at once (what was folded before
// them first).
//
// The clock. An agent.exited without occurredAt is folded with the hub's
// clock (the time of the end beside the snapshot; its lifecycle record
// stays as given). An agent.done without occurredAt is stamped with the hub's
// clock the first time the hub folds it, so that lastTurnEndedAt is always
// set (its lifecycle record carries the event as the source gave it). The
// hub remembers the stamps it gave a session, by the count of such events
// before it, and gives the same stamp again whenever the session is built
// again from the same records: a rescan, a restart of its journal, a
// harness switched off and on. The same records therefore always give the
// same snapshot. (Across bridge restarts the stamps are new.)
//
// Read times. An event without occurredAt (the stamped agent.done
// included) is folded with the moment the hub was handed it
// (fold.Session.ApplyRead) when that is outside a scan, so that the
// session's activity times (statusSince, turnStartedAt, a tool's since)
// say how long it has been so; events folded in a scan (records found at
// start-up, whose age is unknown) have none: their stamp sets
// lastTurnEndedAt only. The read times are remembered like the stamps.
//
// A Sink is safe for concurrent use, but a source calls it from one
// goroutine; Session's result may only be read on that goroutine.
type Sink interface {
	Publisher
	// Fold folds e into session id of harness, creating the session (status
	// idle) when it is new; its records wait for Flush. A rejected event
	// changes nothing and returns an *InvalidError. A session of a declared
	// harness that is switched off is folded and kept out of view. A hidden
	// session (Hide) comes back into view whole.
	Fold(sessionID, harness string, e agentbridge.Event) error
	// Flush commits what was folded since the last Flush: see Sink.
	Flush()
	// Session returns the fold of a session the source reported (in view
	// or not, in a scan the one being built), nil when there is none. It is
	// read only and valid until the next call of the Sink.
	Session(sessionID string) *fold.Session
	// Rescan starts a scan: the sessions are built again, aside, from the
	// calls that follow, and the next Flush makes them the source's whole
	// state with one reset.
	Rescan()
	// Restart forgets what session id's journal told so far (keeping its
	// id and harness); the events that follow build it again, aside, and
	// the next Flush upserts it whole.
	Restart(sessionID string)
	// Hide takes a session out of view (a remove record at the next Flush)
	// and keeps its fold; its next event brings it back whole.
	Hide(sessionID string)
	// Show answers a harness switch that did not need a rescan: a reset of
	// every session in view now. enabled is the set the source was handed;
	// the hub's own switches decide.
	Show(enabled []string)
}

// maxPending bounds the lifecycle records a batch holds before they are
// committed on their own (upserts of sessions being built aside still
// wait for Flush): a huge read reaches clients as a sequence of small
// commits, never as one burst longer than a client's queue.
const maxPending = 256

// maxStamps bounds the clock stamps remembered per session; agent.done
// events without occurredAt beyond it get a fresh stamp each time.
const maxStamps = 1024

// maxGone bounds the sessions whose stamps are remembered after they left
// (stopped, or missing from a scan); beyond it they are forgotten at once.
const maxGone = 4096

// publisher is the Sink of one running source.
type publisher struct {
	h   *Hub
	src *source

	mu    sync.Mutex
	work  map[string]*work // every session of the source, in view or not
	scan  map[string]*work // during a scan: the sessions being built
	gone  map[string]clocks
	pend  []op       // records since the last commit, in call order
	dirty []*work    // sessions folded since the last commit, first touch first
	show  bool       // a Show is pending
	held  []heldHook // hooks for sessions not reported yet (hooks.go)
}

// clocks are the hub's times a session's events were folded with, kept
// after it left so that it is built again the same (work.stamps, work.reads).
type clocks struct{ stamps, reads []int64 }

// work is one session as the hub keeps it for its source.
type work struct {
	id, harness string
	fold        *fold.Session
	hidden      bool // Hide: out of view until its next event
	aside       bool // being built again (Restart): no records until Flush
	dirty       bool
	ref         *incarnation // the lifecycle records of this batch
	shown       *agentbridge.Snapshot
	shownAct    *agentbridge.Activity // the activity beside shown
	shownEnded  *agentbridge.Ended    // the end beside shown
	stamps      []int64               // clock stamps given to agent.done without occurredAt, in order
	dones       int                   // such events folded since the fold began
	reads       []int64               // when each event without occurredAt was read live (0: at start-up), in order
	undated     int                   // such events folded since the fold began
	next        agentbridge.Snapshot
	nextAct     *agentbridge.Activity
	nextEnded   *agentbridge.Ended
	changed     bool
	data        []byte // next, encoded as an upsert, when changed
}

// incarnation groups the lifecycle records of one session between two
// commits, or up to its session.stopped: a filtered subscriber decides on
// all of them by the snapshot they leave.
type incarnation struct {
	snap    *agentbridge.Snapshot
	stopped bool
}

type opKind uint8

const (
	opLifecycle opKind = iota
	opRemove           // session.stopped
	opHide
	opDiag
)

// op is one record waiting for the next commit.
type op struct {
	kind opKind
	w    *work
	ref  *incarnation
	id   string
	data []byte // lifecycle: encoded
	diag agentbridge.Diagnostic
}

func newPublisher(h *Hub, s *source) *publisher {
	return &publisher{h: h, src: s, work: map[string]*work{}}
}

func (p *publisher) cur() map[string]*work {
	if p.scan != nil {
		return p.scan
	}
	return p.work
}

// declared reports whether harness is declared, and whether it is on.
func (p *publisher) harness(harness string) (declared, on bool) {
	p.h.mu.Lock()
	defer p.h.mu.Unlock()
	on, declared = p.src.enabled[harness]
	return declared, on
}

func (p *publisher) Fold(id, harness string, e agentbridge.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fold(id, harness, e, false)
}

// fold folds e; strict refuses a new session of a switched-off harness
// (Publisher.Event, as push sources are refused).
func (p *publisher) fold(id, harness string, e agentbridge.Event, strict bool) error {
	validate.RedactEvent(&e)
	given := e
	m := p.cur()
	w := m[id]
	if w == nil {
		issues := idIssues(id, "$.sessionId")
		declared, on := p.harness(harness)
		switch {
		case harness == "":
			issues = append(issues, validate.Issue{Path: "$.harness", Code: validate.MissingField, Message: "harness is needed when the event makes a new session"})
		case !declared || (strict && !on):
			issues = append(issues, validate.Issue{Path: "$.harness", Code: validate.HarnessNotEnabled, Message: "harness is not declared or not switched on for this source"})
		}
		if len(issues) > 0 {
			return &InvalidError{Issues: issues}
		}
		w = &work{id: id, harness: harness, fold: fold.NewSession(id, harness)}
		if old := p.work[id]; p.scan != nil && old != nil {
			w.stamps, w.reads = old.stamps, old.reads
		} else if st, ok := p.gone[id]; ok {
			w.stamps, w.reads = st.stamps, st.reads
		}
	}
	readAt := int64(0)
	undated := e.OccurredAt == 0
	if undated {
		switch {
		case w.undated < len(w.reads):
			readAt = w.reads[w.undated]
		case p.scan == nil:
			readAt = p.h.now().UnixMilli()
		}
	}
	stamp := e.Kind == agentbridge.KindAgentDone && e.OccurredAt == 0
	var at int64 // the stamp
	if stamp {
		if w.dones < len(w.stamps) {
			at = w.stamps[w.dones]
		} else {
			at = p.h.now().UnixMilli()
		}
	}
	if e.Kind == agentbridge.KindAgentExited && e.OccurredAt == 0 {
		e.OccurredAt = p.h.now().UnixMilli() // the end's time: when the hub learnt of it
	}
	if issues := w.fold.ApplyRead(e, readAt, at); len(issues) > 0 {
		return &InvalidError{Issues: validate.Nest(issues, "$.event")}
	}
	if undated {
		if w.undated == len(w.reads) && len(w.reads) < maxStamps {
			w.reads = append(w.reads, readAt)
		}
		w.undated++
	}
	if stamp {
		if w.dones == len(w.stamps) && len(w.stamps) < maxStamps {
			w.stamps = append(w.stamps, at)
		}
		w.dones++
	}
	m[id] = w
	if p.scan != nil {
		if w.fold.Stopped() {
			delete(m, id)
		}
		return nil
	}
	w.hidden = false
	if !w.aside && !usageOnly(&given) {
		if w.ref == nil {
			w.ref = &incarnation{}
		}
		p.pend = append(p.pend, op{kind: opLifecycle, w: w, ref: w.ref, id: id,
			data: encode(lifecycleData{Source: p.src.info.ID, SessionID: id, Event: given})})
	}
	if w.fold.Stopped() {
		p.stop(w)
	} else {
		p.touch(w)
		p.foldHeld(w)
	}
	if len(p.pend) >= maxPending {
		p.commit(false)
	}
	return nil
}

// usageOnly reports whether e is an agent.metadata event that carries
// nothing but token counts: its lifecycle record would say nothing (Usage
// is not part of the event's JSON), so it has none; the counts reach
// clients in the session's activity.
func usageOnly(e *agentbridge.Event) bool {
	if e.Kind != agentbridge.KindAgentMetadata || e.Usage == nil {
		return false
	}
	c := *e
	c.Usage, c.OccurredAt = nil, 0
	return c == agentbridge.Event{Kind: agentbridge.KindAgentMetadata}
}

// stop ends w: its lifecycle records so far are decided by the snapshot
// before the stop, then it is removed.
func (p *publisher) stop(w *work) {
	if w.ref != nil {
		s := w.fold.Snapshot()
		validate.RedactSnapshot(&s)
		w.ref.snap, w.ref.stopped = &s, true
		w.ref = nil
	}
	delete(p.work, w.id)
	p.keepStamps(w)
	p.pend = append(p.pend, op{kind: opRemove, id: w.id})
}

func (p *publisher) keepStamps(w *work) {
	if len(w.stamps) == 0 && len(w.reads) == 0 {
		return
	}
	if p.gone == nil || len(p.gone) >= maxGone {
		p.gone = map[string]clocks{}
	}
	p.gone[w.id] = clocks{w.stamps, w.reads}
}

func (p *publisher) touch(w *work) {
	if !w.dirty {
		w.dirty = true
		p.dirty = append(p.dirty, w)
	}
}

func (p *publisher) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commit(true)
}

func (p *publisher) Session(id string) *fold.Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := p.cur()[id]; w != nil {
		return w.fold
	}
	return nil
}

func (p *publisher) Rescan() {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A scan still open is dropped (this one replaces it), and so are the
	// sessions being built aside: the scan builds them anew.
	p.commit(false)
	for _, w := range p.dirty {
		w.dirty, w.aside = false, false
	}
	p.dirty = nil
	p.scan = map[string]*work{}
}

func (p *publisher) Restart(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.cur()[id]
	if w == nil {
		return
	}
	w.fold = fold.NewSession(id, w.harness)
	w.dones, w.undated = 0, 0
	if p.scan != nil {
		return
	}
	if w.ref != nil { // what this batch said of it is superseded
		w.ref = nil
		p.pend = slices.DeleteFunc(p.pend, func(o op) bool { return o.kind == opLifecycle && o.w == w })
	}
	w.aside = true
	p.touch(w)
}

func (p *publisher) Hide(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.cur()[id]
	if w == nil || w.hidden {
		return
	}
	w.hidden = true
	if p.scan != nil {
		return
	}
	if w.ref != nil { // shown only to a client that holds the session
		w.ref.snap, w.ref.stopped = w.shown, true
		w.ref = nil
	}
	p.pend = append(p.pend, op{kind: opHide, id: id})
}

func (p *publisher) Show([]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.scan != nil {
		return // the scan ends with a reset anyway
	}
	p.show = true
	p.commit(true)
}

// commit publishes the pending records and upserts; all ends every
// batch (Flush): a scan and sessions being built aside are committed only
// then. p.mu must be held.
func (p *publisher) commit(all bool) {
	if len(p.pend) == 0 && len(p.dirty) == 0 && !(all && (p.scan != nil || p.show)) {
		return
	}
	// Outside the hub's lock: the snapshots and their encodings.
	keep := p.dirty[:0]
	var ready []*work
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
	scan := all && p.scan != nil
	show := all && p.show
	p.show = false

	h := p.h
	h.mu.Lock()
	defer h.mu.Unlock()
	pend := p.pend
	p.pend = p.pend[:0]
	if p.src.ctx.Err() != nil {
		return // shutting down: the host ignores late calls
	}
	t := h.begin(p.src)
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
			if t.get(w.id) != nil {
				t.remove(w.id)
			}
			continue
		}
		if t.get(w.id) == nil || w.changed {
			if data == nil {
				data = encode(upsertData{Source: p.src.info.ID, Snapshot: *w.shown, Activity: w.shownAct, Ended: w.shownEnded})
			}
			t.over[w.id] = &sess{snap: *w.shown, act: w.shownAct, ended: w.shownEnded}
			t.add(&entry{rec: Record{Name: agentbridge.RecordUpsert, Data: data}, source: p.src.info.ID, sessionID: w.id, snap: w.shown, act: w.shownAct, ended: w.shownEnded}, nil)
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
	h.commit(t)
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
		items = append(items, &sess{snap: *w.shown, act: w.shownAct, ended: w.shownEnded})
	}
	if issues := t.opReset("$", items, false); len(issues) > 0 {
		// Cannot happen: the fold keeps its snapshots valid.
		p.h.log.Error("hub: a source's state failed validation", "source", p.src.info.ID, "issues", len(issues))
	}
}

// visible reports whether w is in view: not hidden, its harness on. The
// hub's lock must be held.
func (w *work) visible(s *source) bool { return !w.hidden && s.enabled[w.harness] }

// ---- Publisher: each call commits at once ----

func (p *publisher) Event(sessionID, harness string, e agentbridge.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.fold(sessionID, harness, e, true); err != nil {
		return err
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
	if w := p.cur()[sessionID]; w != nil {
		delete(p.cur(), sessionID)
		p.keepStamps(w)
		if w.ref != nil {
			w.ref.snap, w.ref.stopped = w.shown, true
			w.ref = nil
		}
		w.dirty = false
		p.dirty = slices.DeleteFunc(p.dirty, func(d *work) bool { return d == w })
	}
	if p.scan == nil {
		p.pend = append(p.pend, op{kind: opRemove, id: sessionID})
	}
	p.commit(false) // a scan stays open
	return nil
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
	p.scan = nil // this replaces whatever a scan was building
	p.commit(true)
	next := make(map[string]*work, len(sessions))
	items := make([]*sess, len(sessions))
	for i, s := range sessions {
		if s == nil {
			return &InvalidError{Issues: []validate.Issue{{Path: "$[" + itoa(i) + "]", Code: validate.InvalidType, Message: "session is missing"}}}
		}
		w := p.adopt(s)
		next[w.id] = w
		items[i] = &sess{snap: *w.shown, act: w.shownAct, ended: w.shownEnded}
	}
	return p.apply(func(t *txn) []validate.Issue { return t.opReset("$", items, false) }, func() {
		p.work = next
		p.scan = nil
	})
}

// apply runs one validated operation in its own commit, then done when
// it was taken. p.mu must be held.
func (p *publisher) apply(op func(t *txn) []validate.Issue, done func()) error {
	h := p.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.src.ctx.Err() != nil {
		return nil // shutting down: the host ignores late calls
	}
	t := h.begin(p.src)
	if err := h.finish(t, op(t)); err != nil {
		return err
	}
	done()
	return nil
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
	return p.apply(func(t *txn) []validate.Issue {
		return t.opUpsert("$", &sess{snap: *w.shown, act: w.shownAct, ended: w.shownEnded})
	}, func() { p.work[w.id] = w })
}

// adopt makes a work session from a copy of a source's fold.
func (p *publisher) adopt(s *fold.Session) *work {
	f := s.Clone()
	snap := f.Snapshot()
	validate.RedactSnapshot(&snap)
	w := &work{id: f.ID(), harness: f.Harness(), fold: f, shown: &snap, shownAct: f.Activity(), shownEnded: f.Ended()}
	if old := p.work[w.id]; old != nil {
		w.stamps = old.stamps
	}
	return w
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// snapshotEqual reports whether two snapshots are the same to a client
// (a nil and an empty subagent list encode alike).
func snapshotEqual(a, b *agentbridge.Snapshot) bool {
	return a.ID == b.ID && a.Harness == b.Harness && a.PID == b.PID && a.Cwd == b.Cwd &&
		a.Title == b.Title && a.Model == b.Model && a.Status == b.Status &&
		a.WaitingFor == b.WaitingFor && a.Tool == b.Tool && a.LastTurn == b.LastTurn &&
		a.LastTurnEndedAt == b.LastTurnEndedAt && a.Error == b.Error && slices.Equal(a.Subagents, b.Subagents)
}

var _ Sink = (*publisher)(nil)

// SawVersion notes that a journal of harness named its agent CLI's
// version (sources.Sessions.Version): GET /v1/sources lists it.
func (p *publisher) SawVersion(harness, version string) { p.h.sawVersion(p.src, harness, version) }
