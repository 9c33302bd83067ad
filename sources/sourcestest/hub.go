// Package sourcestest helps test session sources without the real hub: Hub
// is a hub.Publisher that validates and folds what it is given the way the
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
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/validate"
)

// Timeout bounds Hub.WaitFor.
var Timeout = 10 * time.Second

// Call is one Publisher call as Hub saw it.
type Call struct {
	Op        hub.OpKind
	SessionID string                 // upsert, remove, event
	Sessions  []string               // reset: the ids
	Event     agentbridge.Event      // event
	Diag      agentbridge.Diagnostic // diagnostic
}

// Hub is a fake hub.Publisher for one source. It is safe for concurrent use.
type Hub struct {
	mu       sync.Mutex
	changed  chan struct{}
	sessions map[string]*validate.Session
	calls    []Call
	resets   int
	refused  int
	trans    []Transition
	last     map[string]agentbridge.Status
}

// Transition is one change of a session's status, in the order of all the
// Hub's calls. Status "" means the session left the Hub (removed, stopped,
// or dropped by a reset).
type Transition struct {
	Session string
	Status  agentbridge.Status
}

// New returns an empty Hub.
func New() *Hub {
	return &Hub{changed: make(chan struct{}, 1), sessions: map[string]*validate.Session{}, last: map[string]agentbridge.Status{}}
}

func (h *Hub) done(c Call, err error) error {
	if err != nil {
		h.refused++
	} else {
		h.calls = append(h.calls, c)
	}
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
	return err
}

// Reset replaces every session, after validate.Reset accepts them.
func (h *Hub) Reset(list []*validate.Session) error {
	h.mu.Lock()
	snaps := make([]agentbridge.Snapshot, len(list))
	ids := make([]string, len(list))
	for i, s := range list {
		snaps[i] = s.Snapshot()
		ids[i] = snaps[i].ID
	}
	if issues := validate.Reset(snaps, nil); len(issues) > 0 {
		return h.done(Call{}, &hub.InvalidError{Issues: issues})
	}
	old := h.sessions
	h.sessions = map[string]*validate.Session{}
	for _, s := range list {
		h.sessions[s.Snapshot().ID] = s.Clone()
	}
	for id := range old {
		if h.sessions[id] == nil {
			h.note(id, "")
		}
	}
	for _, sn := range snaps {
		h.note(sn.ID, sn.Status)
	}
	h.resets++
	return h.done(Call{Op: hub.OpReset, Sessions: ids}, nil)
}

// Upsert replaces one session, after validate.Snapshot accepts it.
func (h *Hub) Upsert(s *validate.Session) error {
	h.mu.Lock()
	snap := s.Snapshot()
	if issues := validate.Snapshot(snap, nil); len(issues) > 0 {
		return h.done(Call{}, &hub.InvalidError{Issues: issues})
	}
	h.sessions[snap.ID] = s.Clone()
	h.note(snap.ID, snap.Status)
	return h.done(Call{Op: hub.OpUpsert, SessionID: snap.ID}, nil)
}

// Event folds e like the hub: a new session starts idle with harness; a
// rejected event changes nothing; session.stopped removes the session.
func (h *Hub) Event(id, harness string, e agentbridge.Event) error {
	h.mu.Lock()
	s := h.sessions[id]
	if s == nil {
		s = validate.NewSession(id, harness)
	} else {
		s = s.Clone()
	}
	if issues := s.Apply(e); len(issues) > 0 {
		return h.done(Call{}, &hub.InvalidError{Issues: issues})
	}
	if s.Stopped() {
		delete(h.sessions, id)
		h.note(id, "")
	} else {
		h.sessions[id] = s
		h.note(id, s.Snapshot().Status)
	}
	return h.done(Call{Op: hub.OpEvent, SessionID: id, Event: e}, nil)
}

// Remove forgets one session.
func (h *Hub) Remove(id string) error {
	h.mu.Lock()
	delete(h.sessions, id)
	h.note(id, "")
	return h.done(Call{Op: hub.OpRemove, SessionID: id}, nil)
}

// Diagnostic records d after validate.Diagnostic accepts it.
func (h *Hub) Diagnostic(d agentbridge.Diagnostic) error {
	h.mu.Lock()
	if issues := validate.Diagnostic(d); len(issues) > 0 {
		return h.done(Call{}, &hub.InvalidError{Issues: issues})
	}
	return h.done(Call{Op: hub.OpDiagnostic, Diag: d}, nil)
}

// note records a session's status when it changed; called under h.mu.
func (h *Hub) note(id string, st agentbridge.Status) {
	if prev, seen := h.last[id]; seen && prev == st || !seen && st == "" {
		return
	}
	h.last[id] = st
	h.trans = append(h.trans, Transition{Session: id, Status: st})
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
	for _, s := range h.sessions {
		out = append(out, s.Snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Snapshot returns one session's snapshot.
func (h *Hub) Snapshot(id string) (agentbridge.Snapshot, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sessions[id]; s != nil {
		return s.Snapshot(), true
	}
	return agentbridge.Snapshot{}, false
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
		if c.Op == hub.OpDiagnostic {
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

var _ hub.Publisher = (*Hub)(nil)
