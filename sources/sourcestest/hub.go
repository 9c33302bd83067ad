// Package sourcestest helps test session sources without the real hub: Hub
// is a hub.Sink that validates and folds what it is given the way the
// hub does, keeps the resulting snapshots and every change of status, and
// lets a test wait for a condition on them. Replay grows a recorded
// session's journals into a home at the byte offsets they were recorded
// at, runs a real source over them and checks the statuses it reports
// against the phases the recording's authors expect (see LoadScenario).
// Start runs a source against a new Hub for a test, Append grows a journal,
// Golden compares a result with its golden file.
package sourcestest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/validate"
)

// Timeout bounds Hub.WaitFor and a replay's settling: a hang bound, so
// generous that a loaded machine under -race never reaches it (a wait
// returns as soon as its condition holds).
var Timeout = time.Minute

// Call is one Publisher call as Hub saw it.
type Call struct {
	Op        agentbridge.OpKind
	SessionID string                 // upsert, remove, event
	Sessions  []string               // reset: the ids
	Event     agentbridge.Event      // event
	Diag      agentbridge.Diagnostic // diagnostic
}

// Hub is a fake hub.Sink for one source. It is safe for concurrent use.
// It keeps sessions of every harness; Show sets which harnesses are in
// view (before the first Show: all).
type Hub struct {
	mu       sync.Mutex
	changed  chan struct{}
	sessions map[string]*kept
	scan     map[string]*kept // during a scan
	enabled  map[string]bool  // nil: every harness
	calls    []Call
	resets   int
	refused  int
	trans    []Transition
	last     map[string]Transition
}

// Transition is one change of a session's status or end, in the order of
// all the Hub's calls. Status "" means the session left the Hub (removed,
// stopped, hidden, or dropped by a reset); Ended that its process is gone.
type Transition struct {
	Session string
	Status  agentbridge.Status
	Ended   bool
	Shown   agentbridge.Status // ShownStatus: what a user sees ("" when gone)
}

type kept struct {
	s      *fold.Session
	hidden bool
	aside  bool // restarted: upserted at Flush
}

// New returns an empty Hub.
func New() *Hub {
	return &Hub{changed: make(chan struct{}, 1), sessions: map[string]*kept{}, last: map[string]Transition{}}
}

func (h *Hub) done(c Call, err error) error {
	if err != nil {
		h.refused++
	} else if c.Op != "" {
		h.calls = append(h.calls, c)
	}
	h.noteAll()
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
	return err
}

func (h *Hub) cur() map[string]*kept {
	if h.scan != nil {
		return h.scan
	}
	return h.sessions
}

func (h *Hub) visible(k *kept) bool {
	return !k.hidden && (h.enabled == nil || h.enabled[k.s.Harness()])
}

func (h *Hub) resetCall() Call {
	var ids []string
	for _, s := range h.snapshots() {
		ids = append(ids, s.ID)
	}
	h.resets++
	return Call{Op: agentbridge.OpReset, Sessions: ids}
}

// Reset replaces every session, after validate.Reset accepts them.
func (h *Hub) Reset(list []*fold.Session) error {
	h.mu.Lock()
	snaps := make([]agentbridge.Snapshot, len(list))
	for i, s := range list {
		snaps[i] = s.Snapshot()
	}
	if issues := validate.Reset(snaps, nil); len(issues) > 0 {
		return h.done(Call{}, &hub.InvalidError{Issues: issues})
	}
	h.sessions = map[string]*kept{}
	h.scan = nil
	for _, s := range list {
		h.sessions[s.ID()] = &kept{s: s.Clone()}
	}
	return h.done(h.resetCall(), nil)
}

// Upsert replaces one session, after validate.Snapshot accepts it.
func (h *Hub) Upsert(s *fold.Session) error {
	h.mu.Lock()
	snap := s.Snapshot()
	if issues := validate.Snapshot(snap, nil); len(issues) > 0 {
		return h.done(Call{}, &hub.InvalidError{Issues: issues})
	}
	h.sessions[snap.ID] = &kept{s: s.Clone()}
	return h.done(Call{Op: agentbridge.OpUpsert, SessionID: snap.ID}, nil)
}

// Event folds e like the hub: a new session starts idle with harness; a
// rejected event changes nothing; session.stopped removes the session.
func (h *Hub) Event(id, harness string, e agentbridge.Event) error { return h.Fold(id, harness, e) }

// Fold is Event, redacting e first as the hub does: the fake commits every
// event at once (during a scan and for a restarted session it records no
// call). An event the fold rejects is not counted as refused: the hub is
// where events are checked.
func (h *Hub) Fold(id, harness string, e agentbridge.Event) error {
	h.mu.Lock()
	validate.RedactEvent(&e)
	m := h.cur()
	k := m[id]
	if k == nil {
		k = &kept{s: fold.NewSession(id, harness)}
	}
	if issues := k.s.Apply(e); len(issues) > 0 {
		h.done(Call{}, nil)
		return &hub.InvalidError{Issues: issues}
	}
	k.hidden = false
	if k.s.Stopped() {
		delete(m, id)
	} else {
		m[id] = k
	}
	if h.scan != nil || k.aside {
		return h.done(Call{}, nil)
	}
	return h.done(Call{Op: agentbridge.OpEvent, SessionID: id, Event: e}, nil)
}

// Flush ends a scan with a reset and upserts restarted sessions.
func (h *Hub) Flush() {
	h.mu.Lock()
	if h.scan != nil {
		h.sessions, h.scan = h.scan, nil
		h.calls = append(h.calls, h.resetCall())
	}
	for id, k := range h.sessions {
		if k.aside {
			k.aside = false
			h.calls = append(h.calls, Call{Op: agentbridge.OpUpsert, SessionID: id})
		}
	}
	h.done(Call{}, nil)
}

// Session returns the fold of a session, nil when there is none.
func (h *Hub) Session(id string) *fold.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	if k := h.cur()[id]; k != nil {
		return k.s
	}
	return nil
}

// Rescan starts a scan: the sessions are built aside until Flush.
func (h *Hub) Rescan() {
	h.mu.Lock()
	h.scan = map[string]*kept{}
	h.done(Call{}, nil)
}

// Restart builds session id again from the events that follow.
func (h *Hub) Restart(id string) {
	h.mu.Lock()
	if k := h.cur()[id]; k != nil {
		k.s = fold.NewSession(id, k.s.Harness())
		k.aside = h.scan == nil
	}
	h.done(Call{}, nil)
}

// Hide takes a session out of view until its next event.
func (h *Hub) Hide(id string) {
	h.mu.Lock()
	c := Call{}
	if k := h.cur()[id]; k != nil && !k.hidden {
		k.hidden = true
		if h.scan == nil {
			c = Call{Op: agentbridge.OpRemove, SessionID: id}
		}
	}
	h.done(c, nil)
}

// Show puts exactly the sessions of the enabled harnesses in view, with a
// reset.
func (h *Hub) Show(enabled []string) {
	h.mu.Lock()
	h.enabled = map[string]bool{}
	for _, e := range enabled {
		h.enabled[e] = true
	}
	h.done(h.resetCall(), nil)
}

// Remove forgets one session.
func (h *Hub) Remove(id string) error {
	h.mu.Lock()
	delete(h.cur(), id)
	return h.done(Call{Op: agentbridge.OpRemove, SessionID: id}, nil)
}

// Diagnostic records d after validate.Diagnostic accepts it.
func (h *Hub) Diagnostic(d agentbridge.Diagnostic) error {
	h.mu.Lock()
	validate.RedactDiagnostic(&d)
	if issues := validate.Diagnostic(d); len(issues) > 0 {
		return h.done(Call{}, &hub.InvalidError{Issues: issues})
	}
	return h.done(Call{Op: agentbridge.OpDiagnostic, Diag: d}, nil)
}

// noteAll records the status changes of every session, in view or gone,
// in id order; called under h.mu.
func (h *Hub) noteAll() {
	ids := map[string]bool{}
	for id := range h.last {
		ids[id] = true
	}
	for id := range h.sessions {
		ids[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		tr := Transition{Session: id}
		if k := h.sessions[id]; k != nil && h.visible(k) {
			snap := k.s.Snapshot()
			tr.Status, tr.Ended, tr.Shown = snap.Status, k.s.Ended() != nil, ShownStatus(&snap, k.s.Ended())
		}
		if prev, seen := h.last[id]; seen && prev == tr || !seen && tr.Status == "" {
			continue
		}
		h.last[id] = tr
		h.trans = append(h.trans, tr)
	}
}

// Transitions returns every change of status so far, in call order.
func (h *Hub) Transitions() []Transition {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.trans)
}

// Snapshots returns the current snapshots, sorted by id.
func (h *Hub) Snapshots() []agentbridge.Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snapshots()
}

func (h *Hub) snapshots() []agentbridge.Snapshot {
	out := make([]agentbridge.Snapshot, 0, len(h.sessions))
	for _, k := range h.sessions {
		if h.visible(k) {
			out = append(out, k.s.Snapshot())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Snapshot returns one session's snapshot.
func (h *Hub) Snapshot(id string) (agentbridge.Snapshot, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if k := h.sessions[id]; k != nil && h.visible(k) {
		return k.s.Snapshot(), true
	}
	return agentbridge.Snapshot{}, false
}

// What a user sees beyond the four statuses, for tests to name: an idle
// session whose last turn ended ("done"), and one that has ended. They are
// never a snapshot's status; Shown puts them in one.
const (
	StatusDone   agentbridge.Status = "done"
	StatusExited agentbridge.Status = "exited"
)

// ShownStatus is what a user sees of a session's status: StatusExited when
// it has ended, StatusDone when it is idle after a turn, else its status.
func ShownStatus(s *agentbridge.Snapshot, ended *agentbridge.Ended) agentbridge.Status {
	switch {
	case ended != nil:
		return StatusExited
	case s.Status == agentbridge.StatusIdle && s.LastTurn != "":
		return StatusDone
	}
	return s.Status
}

// Shown returns one session's snapshot with its status as ShownStatus
// says: a view for tests, never a valid snapshot to publish.
func (h *Hub) Shown(id string) (agentbridge.Snapshot, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if k := h.sessions[id]; k != nil && h.visible(k) {
		s := k.s.Snapshot()
		s.Status = ShownStatus(&s, k.s.Ended())
		return s, true
	}
	return agentbridge.Snapshot{}, false
}

// Shown returns f's snapshot with its status as ShownStatus says: a view
// for tests, never a valid snapshot to publish.
func Shown(f *fold.Session) agentbridge.Snapshot {
	s := f.Snapshot()
	s.Status = ShownStatus(&s, f.Ended())
	return s
}

// Ended returns how one session ended (nil: it has not, or is unknown).
func (h *Hub) Ended(id string) *agentbridge.Ended {
	h.mu.Lock()
	defer h.mu.Unlock()
	if k := h.sessions[id]; k != nil && h.visible(k) {
		return k.s.Ended()
	}
	return nil
}

// Calls returns the accepted calls in order.
func (h *Hub) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// Diagnostics returns the accepted diagnostics in order.
func (h *Hub) Diagnostics() []agentbridge.Diagnostic {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []agentbridge.Diagnostic
	for _, c := range h.calls {
		if c.Op == agentbridge.OpDiagnostic {
			out = append(out, c.Diag)
		}
	}
	return out
}

// Resets counts the accepted resets.
func (h *Hub) Resets() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.resets
}

// Refused counts the calls the Hub rejected; a correct source makes none.
func (h *Hub) Refused() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused
}

// WaitFor waits until cond holds (called under no lock, with the Hub) or
// Timeout passes, then fails the test naming what it waited for.
func (h *Hub) WaitFor(t testing.TB, what string, cond func(h *Hub) bool) {
	t.Helper()
	deadline := time.After(Timeout)
	for {
		if cond(h) {
			return
		}
		select {
		case <-h.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; sessions %s", what, h.describe())
		}
	}
}

func (h *Hub) describe() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("%+v (%d calls, %d refused)", h.snapshots(), len(h.calls), h.refused)
}

var _ hub.Sink = (*Hub)(nil)

// StatusPID returns a WaitFor condition: session id is listed with status
// as a user sees it (Shown: StatusDone and StatusExited too) and process
// pid (0: none).
func StatusPID(id string, status agentbridge.Status, pid int) func(*Hub) bool {
	return func(h *Hub) bool {
		s, ok := h.Shown(id)
		return ok && s.Status == status && s.PID == pid
	}
}
