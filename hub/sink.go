package hub

import (
	"maps"
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
// same snapshot. (Across bridge restarts the stamps are new.) A session
// given whole (Upsert, Reset, a push source's upsert or reset) keeps the
// stamps and the count of the one it replaces: the events after it are
// new ones.
//
// Push sources. A push source (Hub.AddPush) is a source with no tailer:
// its store is a publisher like this one, and Hub.Publish, Hub.Check and
// Hub.Hook go through the same fold, hook fold, held hooks and clock rule
// (a pushed agent.done without occurredAt is stamped, and an event without
// it read, as a journal's is). What differs is a parameter of the one
// path: an event of a push source never makes a session of a switched-off
// harness (as Publisher.Event), a switched-off harness's sessions leave
// its store (nothing would report them again), and since nothing builds
// its sessions again from the same records, the clocks of a session that
// left are not remembered (a session id used again is a new session).
//
// Read times. An event without occurredAt (the stamped agent.done
// included) is folded with the moment the hub was handed it
// (fold.Session.ApplyRead) when that is outside a scan, so that the
// session's activity times (statusSince, turnStartedAt, a tool's since)
// say how long it has been so; events folded in a scan (records found at
// start-up, whose age is unknown) have none: their stamp sets
// lastTurnEndedAt only. The read times are remembered like the stamps.
//
// Facts. When the hub has a recorder (Options.Recorder), every event it
// folds (Fold, Event, a push source's event, a hook: Fact.Hook) is also a
// Fact, made as it is folded: the event as given, at the time it was
// folded at (its occurredAt, else its read time, else the stamp of an
// agent.done), with the session's model, cwd, title, usage totals and end
// as the fold leaves them; so is every session given whole (Upsert, Reset,
// a push source's upsert or reset: Event.Kind "", at the hub's clock). The
// first event folded into a fold built from nothing (each session of a
// scan, a journal read again after Restart, a session folded for the first
// time in this run; never a push source's) is Fresh; that of any other
// fold built from nothing (a session back after it left, a push source's
// session, one given whole from a snapshot) is Recount. The
// facts are collected in order and handed to the recorder by the commit
// that publishes what they folded, under the hub's lock: a scan's by the
// Flush that ends it, or as it goes once it holds maxScanFacts (a scan
// dropped, by Rescan or Reset, drops those it holds: what replaces it
// tells them again), a restarted session's by the next commit,
// a push batch's only when the batch is kept; a source shutting down drops
// them with its records. Without a recorder no fact is made.
//
// A Sink is safe for concurrent use, but a source calls it from one
// goroutine; Session's result may only be read on that goroutine.
//
// Reading a fold. The fold Session returns is written only by the calls of
// the source's own goroutine (Fold, Restart, …), so the source reads it
// without a lock. Hub.Hook, which comes in on another goroutine, never
// writes it: a hook folds into a copy of the fold that replaces it, under
// the Sink's lock, and the source sees the hook's effect from its next
// call of Session on. A fold the source keeps across a Sink call is
// therefore a stale copy, never a torn one.
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
	// read only and valid until the next call of the Sink. The source may
	// read all of it on its own goroutine while hooks come in: a hook
	// never writes a fold Session returned (see Sink, Reading a fold).
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

	mu   sync.Mutex
	work map[string]*work // every session of the source, in view or not
	scan map[string]*work // during a scan: the sessions being built
	gone map[string]clocks
	// rebuilds: the source may build a session again from the same records
	// (it has a tailer), so the clocks of one that left are remembered
	rebuilds bool
	pend     []op                // records since the last commit, in call order
	dirty    []*work             // sessions folded since the last commit, first touch first
	show     bool                // a Show is pending
	held     []heldHook          // hooks for sessions not reported yet (hooks.go)
	facts    []Fact              // for the recorder, since the last commit (recorder.go)
	told     map[string]struct{} // sessions folded since the hub started (recorder.go; at most maxTold)

	// An open batch of a push source (publisher.batch): its number (0:
	// none), what the entries of work it changed held before it, the map
	// it replaced whole (a reset), and whether gone is still shared with
	// the state before it.
	open       uint64
	batches    uint64
	undo       []undo
	replaced   map[string]*work
	goneShared bool
}

// undo is what an entry of the work map held before an open batch changed
// it (nil: none).
type undo struct {
	id string
	w  *work
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
	owner       uint64 // the batch that made or cloned it (publisher.open)
	fresh       bool   // its fold was built from nothing and has no fact yet (Fact.Fresh)
	anew        bool   // its fold was built from nothing and has no fact yet, Fresh or not (Fact.Recount)
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
	return &publisher{h: h, src: s, work: map[string]*work{}, rebuilds: s.run != nil}
}

// intake is what differs between the callers of the one fold: where its
// issue paths start, whether a new session of a switched-off harness is
// refused, and whether the caller holds the hub's lock.
type intake struct {
	prefix string // "$", or "$[2]" for an operation of a push batch
	strict bool   // Publisher.Event and push sources: a switched-off harness makes no session
	locked bool   // the hub's lock is held (a push batch)
}

// sink is the intake of a running source's Fold.
var sink = intake{prefix: "$"}

// invalid is the error of a rejected call: nil when there are no issues.
func invalid(issues []validate.Issue) error {
	if len(issues) == 0 {
		return nil
	}
	return &InvalidError{Issues: issues}
}

// get returns the work of a session in the current map. In an open batch
// a work the batch has not made or cloned yet is cloned first, so that a
// batch that is not kept leaves the store as it was.
func (p *publisher) get(id string) *work {
	m := p.cur()
	w := m[id]
	if p.open == 0 || w != nil && w.owner == p.open {
		return w
	}
	p.note(id)
	if w == nil {
		return nil
	}
	c := *w
	c.fold = w.fold.Clone()
	c.stamps, c.reads = slices.Clip(w.stamps), slices.Clip(w.reads)
	c.owner = p.open
	m[id] = &c
	return &c
}

// note records what the work map holds for id before an open batch
// changes it.
func (p *publisher) note(id string) {
	if p.open != 0 && p.replaced == nil {
		p.undo = append(p.undo, undo{id, p.work[id]})
	}
}

// fresh notes a work made now: an open batch owns it.
func (p *publisher) fresh(w *work) { w.owner = p.open }

// view is what clients see of w.
func (w *work) view() *sess { return &sess{snap: *w.shown, act: w.shownAct, ended: w.shownEnded} }

func (p *publisher) cur() map[string]*work {
	if p.scan != nil {
		return p.scan
	}
	return p.work
}

// declared reports whether harness is declared, and whether it is on;
// locked says the caller holds the hub's lock.
func (p *publisher) harness(harness string, locked bool) (declared, on bool) {
	if !locked {
		p.h.mu.Lock()
		defer p.h.mu.Unlock()
	}
	on, declared = p.src.enabled[harness]
	return declared, on
}

func (p *publisher) Fold(id, harness string, e agentbridge.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if issues := p.fold(id, harness, e, sink); len(issues) > 0 {
		return &InvalidError{Issues: issues}
	}
	if len(p.pend) >= maxPending {
		p.commit(false)
	}
	return nil
}

// fold folds e into the store, the one fold of an event of every local
// source (Fold, Publisher.Event, a push source's event operation); in
// says how the caller differs. A rejected event changes nothing.
func (p *publisher) fold(id, harness string, e agentbridge.Event, in intake) []validate.Issue {
	validate.RedactEvent(&e)
	given := e
	m := p.cur()
	w := p.get(id)
	if w == nil {
		issues := idIssues(id, in.prefix+".sessionId")
		declared, on := p.harness(harness, in.locked)
		switch {
		case harness == "":
			issues = append(issues, validate.Issue{Path: in.prefix + ".harness", Code: validate.MissingField, Message: "harness is needed when the event makes a new session"})
		case !declared || (in.strict && !on):
			issues = append(issues, validate.Issue{Path: in.prefix + ".harness", Code: validate.HarnessNotEnabled, Message: "harness is not declared or not switched on for this source"})
		}
		if len(issues) > 0 {
			return issues
		}
		w = &work{id: id, harness: harness, fold: fold.NewSession(id, harness), fresh: p.freshFold(id), anew: true}
		p.fresh(w)
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
		return validate.Nest(issues, in.prefix+".event")
	}
	if p.h.rec != nil { // e: as given, but for an agent.exited's time
		p.record(w, &e, foldedAt(e.OccurredAt, readAt, at), false)
		if p.scan != nil && !in.locked && len(p.facts) >= maxScanFacts {
			p.spillScan()
		}
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
	if !p.rebuilds || len(w.stamps) == 0 && len(w.reads) == 0 {
		return
	}
	if p.gone == nil || len(p.gone) >= maxGone {
		p.gone = map[string]clocks{}
	} else if p.goneShared { // an open batch: the state before it keeps its own
		p.gone = maps.Clone(p.gone)
	}
	p.goneShared = false
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
	p.dropScan()
	for _, w := range p.dirty {
		w.dirty, w.aside = false, false
	}
	p.dirty = nil
	p.scan = map[string]*work{}
}

// dropScan drops a scan still open, with the facts of what it folded:
// what replaces it tells them again. p.mu must be held.
func (p *publisher) dropScan() {
	if p.scan != nil {
		p.scan = nil
		p.dropFacts()
	}
}

func (p *publisher) Restart(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.get(id)
	if w == nil {
		return
	}
	w.fold = fold.NewSession(id, w.harness)
	w.dones, w.undated, w.fresh, w.anew = 0, 0, true, true
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
