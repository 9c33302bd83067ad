// Package answer keeps the permission prompts that agents' hooks hold open
// for an answer from elsewhere (opt-in answering: `agentbridge hooks
// install --answer` and the bridge's hooks.answer switch), and writes the
// audit log of the answers given.
//
// A wait is opened when an agent's PermissionRequest hook asks to wait; it
// is closed exactly once: by an answer (Answer), by a sign that the prompt
// was answered at the agent's terminal (Settle: a later hook of the same
// call or the end of the turn), by its hook going away (the agent gave up
// on it, the timeout passed, the bridge is stopping), or by a newer prompt
// of the same session. Only the wait open now can be answered: any other
// gets a *Conflict with the state it was closed in, never a stale approval.
package answer

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Decisions a verdict carries.
const (
	Allow = "allow" // run the tool
	Deny  = "deny"  // refuse it, with the message as the reason
	None  = "none"  // no verdict: the agent's own prompt decides
)

// States of a wait.
const (
	StateOpen       = "open"       // the hook is waiting
	StateAnswered   = "answered"   // answered through the bridge
	StateAtTerminal = "terminal"   // answered at the agent's terminal (or the turn ended)
	StateGone       = "gone"       // the hook stopped waiting (its timeout, the agent, the bridge stopping) or the session ended
	StateSuperseded = "superseded" // a newer prompt of the same session replaced it
)

// MaxMessage bounds a deny reason, in bytes.
const MaxMessage = 1024

// Verdict is what a waiting hook is told.
type Verdict struct {
	Decision string `json:"decision"`          // Allow, Deny or None
	Message  string `json:"message,omitempty"` // the reason of a deny
}

// Answerable says that a session's prompt can be answered now, and what it
// asks; a session entry carries it beside its snapshot.
type Answerable struct {
	WaitID string `json:"waitId"`
	// Tool is the tool asked about ("Bash"), display text.
	Tool string `json:"tool,omitempty"`
	// Request is what the tool would do (the whole command, a file),
	// redacted and bounded to 4,096 characters.
	Request string `json:"request,omitempty"`
	Since   int64  `json:"since"` // epoch ms
	Until   int64  `json:"until"` // epoch ms: the hook stops waiting then
}

// Conflict is the error of an answer to a wait that is not open.
type Conflict struct {
	State string // the wait's state: one of the State constants
	// Current is the wait open now for the session, nil if none.
	Current *Answerable
}

func (c *Conflict) Error() string { return "answer: the wait is " + c.State }

// ErrNoWait is the error of an answer to a wait this bridge never had (or
// has forgotten).
var ErrNoWait = errors.New("answer: no such wait")

// ErrClosed is the error of Open after Close.
var ErrClosed = errors.New("answer: the bridge is stopping")

// maxRecent bounds the closed waits remembered for a 409's state.
const maxRecent = 256

// Waits is the set of open waits, at most one per session. Its zero value
// is not usable: use New.
type Waits struct {
	now func() time.Time

	mu     sync.Mutex
	open   map[string]*Wait // by session key
	links  map[string]*Wait // open waits by their link secret
	recent map[string]string
	order  []string // recent's ids, oldest first
	closed bool
}

// New returns an empty set.
func New() *Waits {
	return &Waits{now: time.Now, open: map[string]*Wait{}, links: map[string]*Wait{}, recent: map[string]string{}}
}

// Wait is one open prompt. Its hook reads Done, and calls Leave when it
// stops waiting.
type Wait struct {
	ws     *Waits
	key    string
	call   string // the hooks' digest of the call (hooks.Signal's key)
	link   string // the secret of its answer link (Link)
	info   Answerable
	done   chan Verdict // buffered: the one verdict
	closed bool
	state  string
}

func sessionKey(source, session string) string { return source + "\x00" + session }

// Open opens a wait for a session's prompt that the hook holds for d; a
// wait already open for the session is closed (StateSuperseded, no
// verdict). call is the digest that names the tool call across its hooks.
func (ws *Waits) Open(source, session, call, tool, request string, d time.Duration) (*Wait, error) {
	id, err := newID()
	if err != nil {
		return nil, err
	}
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, fmt.Errorf("answer: a link secret: %w", err)
	}
	now := ws.now()
	w := &Wait{ws: ws, key: sessionKey(source, session), call: call, link: hex.EncodeToString(secret[:]), done: make(chan Verdict, 1),
		info: Answerable{WaitID: id, Tool: tool, Request: request, Since: now.UnixMilli(), Until: now.Add(d).UnixMilli()}}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return nil, ErrClosed
	}
	if old := ws.open[w.key]; old != nil {
		ws.closeLocked(old, StateSuperseded, Verdict{Decision: None})
	}
	ws.open[w.key] = w
	ws.links[w.link] = w
	return w, nil
}

func newID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("answer: a wait id: %w", err)
	}
	return "w" + hex.EncodeToString(b[:]), nil
}

// ID is the wait's id.
func (w *Wait) ID() string { return w.info.WaitID }

// Until is when the hook stops waiting.
func (w *Wait) Until() time.Time { return time.UnixMilli(w.info.Until) }

// Done delivers the wait's one verdict when it is closed.
func (w *Wait) Done() <-chan Verdict { return w.done }

// Leave closes the wait, if still open, because its hook stopped waiting
// (StateGone, no verdict).
func (w *Wait) Leave() {
	w.ws.mu.Lock()
	defer w.ws.mu.Unlock()
	w.ws.closeLocked(w, StateGone, Verdict{Decision: None})
}

// closeLocked closes w in state with v; ws.mu must be held.
func (ws *Waits) closeLocked(w *Wait, state string, v Verdict) {
	if w.closed {
		return
	}
	w.closed, w.state = true, state
	w.done <- v
	if ws.open[w.key] == w {
		delete(ws.open, w.key)
	}
	delete(ws.links, w.link)
	ws.recent[w.info.WaitID] = state
	ws.order = append(ws.order, w.info.WaitID)
	if len(ws.order) > maxRecent {
		delete(ws.recent, ws.order[0])
		ws.order = ws.order[1:]
	}
}

// Answer answers the wait id of a session with v (Allow or Deny). It
// fails with a *Conflict when that wait is no longer open (or another is
// open now), ErrNoWait when the bridge does not know it.
func (ws *Waits) Answer(source, session, id string, v Verdict) error {
	if v.Decision != Allow && v.Decision != Deny {
		return fmt.Errorf("answer: the decision must be %s or %s", Allow, Deny)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	cur := ws.open[sessionKey(source, session)]
	if cur != nil && cur.info.WaitID == id {
		ws.closeLocked(cur, StateAnswered, v)
		return nil
	}
	var info *Answerable
	if cur != nil {
		a := cur.info
		info = &a
	}
	if st, ok := ws.recent[id]; ok {
		return &Conflict{State: st, Current: info}
	}
	if info != nil {
		return &Conflict{State: StateSuperseded, Current: info}
	}
	return ErrNoWait
}

// Settle closes a session's open wait because its prompt was answered at
// the agent's terminal: call is the tool call a later hook names (its
// PostToolUse, PermissionDenied), "" for the end of the turn, which
// settles any wait. It reports whether a wait was closed.
func (ws *Waits) Settle(source, session, call string) bool {
	return ws.closeOpen(source, session, call, StateAtTerminal)
}

// End closes a session's open wait without a verdict (StateGone) because
// the session has ended: its agent is gone, so no answer may reach it. It
// reports whether a wait was closed.
func (ws *Waits) End(source, session string) bool {
	return ws.closeOpen(source, session, "", StateGone)
}

// closeOpen closes a session's open wait, if it is of call ("": any), in
// state without a verdict.
func (ws *Waits) closeOpen(source, session, call, state string) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.open[sessionKey(source, session)]
	if w == nil || (call != "" && call != w.call) {
		return false
	}
	ws.closeLocked(w, state, Verdict{Decision: None})
	return true
}

// Link is the secret of a session's open wait's answer link (a webhook's
// action link: whoever has it may answer that one wait while it is open),
// "" when none is open.
func (ws *Waits) Link(source, session string) string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.open[sessionKey(source, session)]; w != nil {
		return w.link
	}
	return ""
}

// Linked is the open wait a link secret names: its source, session and
// what it asks; ok is false when the secret names no open wait (never
// was, answered, closed).
func (ws *Waits) Linked(secret string) (source, session string, a Answerable, ok bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.links[secret]
	if w == nil {
		return "", "", Answerable{}, false
	}
	source, session, _ = strings.Cut(w.key, "\x00")
	return source, session, w.info, true
}

// Answerable returns the session's open wait, nil when none.
func (ws *Waits) Answerable(source, session string) *Answerable {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.open[sessionKey(source, session)]
	if w == nil {
		return nil
	}
	a := w.info
	return &a
}

// Close closes every open wait without a verdict (StateGone) and refuses
// new ones: the bridge is stopping.
func (ws *Waits) Close() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closed = true
	for _, w := range ws.open {
		ws.closeLocked(w, StateGone, Verdict{Decision: None})
	}
}
