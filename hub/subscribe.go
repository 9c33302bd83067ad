package hub

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// maxPartial bounds the remembered revision ranges of initial batches (see
// Subscribe); forgetting one raises the replay floor instead, which is safe.
const maxPartial = 4096

// Subscription is one stream client's view of the hub. Send Initial first,
// then every record from C, in order; stop when Done is closed. The caller
// must call Close when done with it.
//
// A subscription has one queue: C, of Options.QueueSize records, filled
// without blocking by the goroutine that commits (a filtered one's records
// are made there, under the hub's lock). A filter by project or ancestor
// needs answers from the file system and /proc, which are never read under
// the hub's lock: while an answer is missing, the committed records wait
// (at most Options.QueueSize of them) for a goroutine of the subscription
// that looks the answers up and then makes them, in order. A consumer with
// a bounded queue of its own (the SSE handler: r3's stream) can take the
// records straight into it with Attach instead, so that no record waits in
// two queues.
type Subscription struct {
	// Initial holds the records to send first, in order: either the replay
	// of every record after the cursor (Resumed), or a reset for every
	// source (with upserts after a reset for sessions beyond the first
	// validate.MaxResetSessions).
	Initial []Record
	// Resumed reports whether Initial replays the records after the cursor
	// rather than resetting.
	Resumed bool
	// C delivers the live records, in revision order, until Attach. It is
	// never closed.
	C <-chan Record
	// Done is closed when the subscription ends: after Close, or when the
	// client fell behind by a whole queue and was cut off (see CutOff).
	Done <-chan struct{}

	h       *Hub
	c       chan Record
	view    *view                 // nil: unfiltered
	deliver func(rec Record) bool // set by Attach; called under the hub's lock or fmu
	done    chan struct{}

	// fmu guards view, pending and pumping once the subscription is open,
	// and is held while a filtered subscription's records are sent. The
	// hub's lock, when held as well, is taken first; fmu is never held
	// across file-system or /proc reads.
	fmu     sync.Mutex
	pending []*entry // committed, waiting for answers to make their records
	pumping bool     // a goroutine (or Subscribe) works through pending
	once    sync.Once
	cut     atomic.Bool
}

// CutOff reports whether the subscription ended because its client did not
// keep up. Such a client recovers by resuming from the last id it saw.
func (s *Subscription) CutOff() bool { return s.cut.Load() }

// Close ends the subscription; it is safe to call more than once and from
// any goroutine.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	if _, ok := s.h.subs[s]; ok {
		delete(s.h.subs, s)
		s.h.met.clients.Dec()
	}
	s.h.mu.Unlock()
	s.end()
}

// Attach hands the records queued in C, then every later record, to
// deliver instead of C, in order and one at a time, from the goroutine that
// commits them and under the hub's lock (or, for records that waited for a
// filter's answers, from the subscription's goroutine): deliver must not
// block or call the hub. When it returns false (its queue is full), the
// subscription is cut off as if C had overflowed. Attach reports false when
// the subscription has already ended. Call it once, after sending Initial.
func (s *Subscription) Attach(deliver func(rec Record) bool) bool {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if _, ok := h.subs[s]; !ok {
		return false
	}
	for {
		select {
		case r := <-s.c:
			if !deliver(r) {
				h.cutOff(s)
				return false
			}
			continue
		default:
		}
		break
	}
	s.deliver = deliver
	return true
}

// Overflow ends the subscription as cut off, for a consumer that could not
// keep up further down the line (the HTTP layer's own buffer): Done closes,
// CutOff reports true and the hub counts it. Call Close as well.
func (s *Subscription) Overflow() {
	s.h.mu.Lock()
	s.h.cutOff(s)
	s.h.mu.Unlock()
}

func (s *Subscription) end() { s.once.Do(func() { close(s.done) }) }

// Subscribe opens a stream view selected by f.
//
// When hasSince is true and the hub still holds every record after since
// (since is from this run, not beyond the current revision, and not evicted
// from the ring), Initial replays exactly those records. Otherwise — no
// cursor, a cursor too old, from the future or from an earlier run —
// Initial holds one reset per source with the state at the current
// revision (sessions sorted by id), followed by upserts for sessions beyond
// the first validate.MaxResetSessions of a source.
//
// Ids of initial resets: the hub reserves one fresh revision per initial
// record, so the ids a client sees always grow and never repeat. The last
// initial record carries the highest reserved revision; a cursor that names
// any earlier one (a client dropped in the middle of its initial batch) is
// not resumable and gets resets again, so no source's reset can be
// skipped. The state does not change across the reserved revisions.
//
// A filtered subscription gets resets with only the matching sessions, an
// upsert only for a matching session, a remove when a session it saw stops
// matching, lifecycle records only for sessions it holds or that match
// after the event (so the event that takes a session out of the filter is
// still shown, before its remove), and diagnostic
// and harnesses records of the sources it selects. When it resumes from a
// cursor, the hub cannot know which sessions it saw, so a non-matching
// upsert of a session it has not seen since becomes a remove (a no-op for
// the client if it never had it). Unfiltered subscriptions share one
// encoding per record.
//
// Live records are queued without blocking the hub; a subscriber that falls
// Options.QueueSize records behind is cut off: Done closes and CutOff
// reports true.
func (h *Hub) Subscribe(since uint64, hasSince bool, f agentbridge.Filter) *Subscription {
	filtered := !emptyFilter(f)
	done := make(chan struct{})
	s := &Subscription{h: h, done: done, Done: done, c: make(chan Record, h.queue)}
	s.C = s.c
	if filtered {
		s.view = newView(f, h.procRoot)
	}

	h.mu.Lock()
	var replay []*entry
	var captured []capture
	var base, top uint64
	if hasSince && h.resumable(since) {
		s.Resumed = true
		replay = h.ring.after(since)
	} else {
		captured, base, top = h.captureAll(f, filtered)
	}
	// A filtered view is made before any live record reaches it: live
	// entries wait in pending until then.
	s.pumping = filtered
	h.subs[s] = struct{}{}
	h.met.clients.Inc()
	h.mu.Unlock()
	if !filtered {
		s.Initial = s.initial(replay, captured, base, top)
		return s
	}
	var q facts
	for _, e := range replay {
		s.view.need(&q, e)
	}
	for _, c := range captured {
		s.view.needCapture(&q, c)
	}
	a := s.view.m.lookup(q)
	s.fmu.Lock()
	s.view.m.learn(a)
	s.Initial = s.initial(replay, captured, base, top)
	s.fmu.Unlock()
	s.pump(false)
	return s
}

// initial makes the records a new subscriber starts with.
func (s *Subscription) initial(replay []*entry, captured []capture, base, top uint64) []Record {
	var out []Record
	switch {
	case s.Resumed && s.view == nil:
		out = make([]Record, len(replay))
		for i, e := range replay {
			out[i] = e.rec
		}
	case s.Resumed:
		for _, e := range replay {
			out = append(out, s.view.records(e)...)
		}
	default:
		for _, c := range captured {
			if s.view != nil {
				out = append(out, s.view.initial(c)...)
			} else {
				out = append(out, c.recs...)
			}
		}
		for i := range out {
			out[i].Rev = base + 1 + uint64(i)
		}
		if n := len(out); n > 0 {
			out[n-1].Rev = top
		}
	}
	return out
}

// resumable reports whether every record after since is still in the ring.
// h.mu must be held.
func (h *Hub) resumable(since uint64) bool {
	if since < h.floor || since > h.rev {
		return false
	}
	i := sort.Search(len(h.partial), func(i int) bool { return h.partial[i].hi >= since })
	return i == len(h.partial) || since < h.partial[i].lo
}

// prunePartial forgets initial-batch ranges that the floor already covers,
// and the oldest ones beyond maxPartial (raising the floor). h.mu must be
// held.
func (h *Hub) prunePartial() {
	i := 0
	for i < len(h.partial) && h.partial[i].hi <= h.floor {
		i++
	}
	if n := len(h.partial) - i - maxPartial; n > 0 {
		i += n
		h.floor = max(h.floor, h.partial[i-1].hi)
	}
	if i > 0 {
		h.partial = slices.Delete(h.partial, 0, i)
	}
}

// capture is one source's state as a new subscriber starts with it.
type capture struct {
	source   string
	host     string
	sessions []agentbridge.Snapshot // filtered subscribers: sorted by id
	acts     map[string]*agentbridge.Activity
	endeds   map[string]*agentbridge.Ended
	recs     []Record // unfiltered subscribers: reset and overflow upserts, Rev unset
}

// initCache keeps the encoded initial records of a source for as long as
// the source does not change, so that many clients connecting at once
// share one encoding.
type initCache struct {
	ver  uint64
	recs []Record
}

// captureAll takes every selected source's state and reserves one revision
// per initial record: the records get base+1 … top. h.mu must be held.
func (h *Hub) captureAll(f agentbridge.Filter, filtered bool) (out []capture, base, top uint64) {
	k := 0
	for _, src := range h.streamed() {
		if !selects(f, src) {
			continue
		}
		id := src.info.ID
		snaps := make([]agentbridge.Snapshot, 0, len(src.sessions))
		var acts map[string]*agentbridge.Activity
		var endeds map[string]*agentbridge.Ended
		for _, ss := range src.sessions {
			snaps = append(snaps, ss.snap)
			acts = addActivity(acts, ss.snap.ID, ss.act)
			endeds = addEnded(endeds, ss.snap.ID, ss.ended)
		}
		c := capture{source: id, host: src.host, acts: acts, endeds: endeds}
		if filtered {
			slices.SortFunc(snaps, bySessionID)
			c.sessions = snaps
		} else {
			if src.cache == nil || src.cache.ver != src.ver {
				slices.SortFunc(snaps, bySessionID)
				src.cache = &initCache{ver: src.ver, recs: initialRecords(src.host, id, snaps, acts, endeds)}
			}
			c.recs = src.cache.recs
		}
		k += 1 + max(0, len(src.sessions)-validate.MaxResetSessions)
		out = append(out, c)
	}
	base = h.rev
	h.rev += uint64(k)
	h.reserve()
	top = h.rev
	if k >= 2 {
		h.partial = append(h.partial, revRange{base + 1, top - 1})
		h.prunePartial()
	}
	return out, base, top
}

func bySessionID(a, b agentbridge.Snapshot) int {
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}

// initialRecords encodes a reset of snaps (the first MaxResetSessions) and
// upserts for the rest; revisions are left for the caller.
func initialRecords(host, source string, snaps []agentbridge.Snapshot, acts map[string]*agentbridge.Activity, endeds map[string]*agentbridge.Ended) []Record {
	head := snaps[:min(len(snaps), validate.MaxResetSessions)]
	var headActs map[string]*agentbridge.Activity
	var headEnded map[string]*agentbridge.Ended
	for _, sn := range head {
		headActs = addActivity(headActs, sn.ID, acts[sn.ID])
		headEnded = addEnded(headEnded, sn.ID, endeds[sn.ID])
	}
	out := []Record{{Name: agentbridge.RecordReset, Data: encode(resetData{Source: source, Host: host, Sessions: head, Activity: headActs, Ended: headEnded})}}
	for _, sn := range snaps[len(head):] {
		out = append(out, Record{Name: agentbridge.RecordUpsert, Data: encode(upsertData{Source: source, Host: host, Snapshot: sn, Activity: acts[sn.ID], Ended: endeds[sn.ID]})})
	}
	return out
}

// deliver hands a committed entry to every subscriber without blocking;
// one whose queue is full is cut off. h.mu must be held.
func (h *Hub) deliver(e *entry) {
	for s := range h.subs {
		if s.view == nil {
			if !s.send(e.rec) {
				h.cutOff(s)
			}
			continue
		}
		if !s.offer(e) {
			h.cutOff(s)
		}
	}
}

// offer hands a committed entry to a filtered subscriber: its records at
// once when the view has every answer it needs and nothing waits before
// it, else the entry waits in pending for pump. It reports false when the
// subscriber's queue, or the entries waiting, are full. h.mu must be held.
func (s *Subscription) offer(e *entry) bool {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if !s.pumping && s.view.ready(e) {
		return s.emit(e)
	}
	if len(s.pending) >= s.h.queue {
		return false
	}
	s.pending = append(s.pending, e)
	if !s.pumping {
		s.pumping = true
		go s.pump(true)
	}
	return true
}

// emit sends the records e makes for the filtered subscriber; false: its
// queue is full. s.fmu must be held, and the view must be ready for e.
func (s *Subscription) emit(e *entry) bool {
	for _, r := range s.view.records(e) {
		if !s.send(r) {
			return false
		}
	}
	return true
}

// pump makes the records of the pending entries, in order, while
// s.pumping is true. It looks up the answers they need from the file
// system and /proc with no lock held, unless lookup is false: then it
// leaves that to a goroutine of its own (Subscribe's caller does not wait
// on it). It returns when no entry waits, or when the subscription has
// ended or is cut off for a full queue; then s.pumping is false.
func (s *Subscription) pump(lookup bool) {
	s.fmu.Lock()
	for {
		for len(s.pending) > 0 && !s.ended() && s.view.ready(s.pending[0]) {
			e := s.pending[0]
			s.pending[0] = nil
			s.pending = s.pending[1:]
			if !s.emit(e) {
				s.pending, s.pumping = nil, false
				s.fmu.Unlock()
				s.Overflow()
				return
			}
		}
		if len(s.pending) == 0 || s.ended() {
			s.pending, s.pumping = nil, false
			s.fmu.Unlock()
			return
		}
		if !lookup {
			s.fmu.Unlock()
			go s.pump(true)
			return
		}
		var q facts
		s.view.need(&q, s.pending[0])
		s.fmu.Unlock()
		a := s.view.m.lookup(q)
		s.fmu.Lock()
		s.view.m.learn(a)
	}
}

// ended reports whether the subscription has ended.
func (s *Subscription) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// send queues one record without blocking; false: the queue is full.
func (s *Subscription) send(r Record) bool {
	if s.deliver != nil {
		return s.deliver(r)
	}
	select {
	case s.c <- r:
		return true
	default:
		return false
	}
}

// cutOff ends a subscriber that did not keep up. h.mu must be held.
func (h *Hub) cutOff(s *Subscription) {
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	s.cut.Store(true)
	s.end()
	h.met.clients.Dec()
	h.met.cutoffs.Inc()
	h.log.Debug("stream client cut off: it did not keep up")
}
