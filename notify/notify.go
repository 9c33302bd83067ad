// Package notify tells people when a session needs them: it turns the
// bridge's stream into transitions (a session starts waiting or blocked,
// a turn ends or fails, the agent exits) and delivers them — as JSON POSTs
// to configured webhooks (Webhooks) and as desktop notifications over
// D-Bus (Desktop, used by `agentbridge notify`).
//
// A transition is told once: a wait is one transition however long it
// goes on (the same status and reason again say nothing), and what a
// client sees when it first connects is the baseline, never a transition.
package notify

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/text"
)

// The transition events, as webhooks name them in their "events" list and
// in the "status" of what they post.
const (
	EventWaiting = "waiting" // a session started waiting for the user
	EventBlocked = "blocked" // a session cannot go on for another reason
	EventFailed  = "failed"  // a turn ended failed
	EventDone    = "done"    // a turn ended (completed or cancelled)
	EventExited  = "exited"  // the agent's process ended
)

// Events lists every transition event (the configuration's
// notify.webhooks[].events values).
var Events = config.WebhookEvents

// Transition is one change of a session worth telling. Its JSON form is
// the body a webhook receives, plus "text" (a one-line summary Slack and
// ntfy show as the message).
type Transition struct {
	Source     string `json:"source"`
	SessionID  string `json:"sessionId"`
	Harness    string `json:"harness"`
	Status     string `json:"status"` // the event: waiting, blocked, failed, done, exited
	Title      string `json:"title,omitempty"`
	WaitingFor string `json:"waitingFor,omitempty"`
	Host       string `json:"host,omitempty"`
	At         int64  `json:"at"` // epoch ms the bridge saw it
	Text       string `json:"text"`
	// Answer is the answer link of a waiting session's permission prompt,
	// only on the POSTs of a webhook with an AnswerURL.
	Answer *AnswerLink `json:"answer,omitempty"`

	id string // the delivery id webhooks send as Idempotency-Key
}

// AnswerLink is a link that answers a permission prompt: its page shows
// the prompt, and its form approves or denies it, once, while it is open.
// Whoever has the URL can: it is a secret.
type AnswerLink struct {
	URL string `json:"url"`
}

// Summary is a one-line description: "Claude Code: Fix the tests — waiting: approve Bash".
func (t Transition) Summary(agent string) string {
	if agent == "" {
		agent = t.Harness
	}
	s := agent
	if t.Title != "" {
		s += ": " + t.Title
	}
	s += " — " + t.Status
	if t.WaitingFor != "" {
		s += ": " + t.WaitingFor
	}
	return s
}

// Detect returns the event a session's new state makes after prev (nil:
// a session not seen before), if any: waiting or blocked when a new wait
// shows; done or failed when an idle session's last turn ended at a new
// time (or with a new outcome); exited when the session ended.
func Detect(prev *agentbridge.Entry, next *agentbridge.Entry) (event string, ok bool) {
	n := &next.Snapshot
	if next.Ended != nil {
		if prev != nil && prev.Ended != nil {
			return "", false
		}
		return EventExited, true
	}
	switch n.Status {
	case agentbridge.StatusWaiting, agentbridge.StatusBlocked:
		if prev != nil && prev.Ended == nil && prev.Snapshot.Status == n.Status && prev.Snapshot.WaitingFor == n.WaitingFor {
			return "", false // the same wait goes on
		}
		return string(n.Status), true
	case agentbridge.StatusIdle:
		if n.LastTurn == "" {
			return "", false
		}
		if prev != nil && prev.Snapshot.Status == agentbridge.StatusIdle &&
			prev.Snapshot.LastTurnEndedAt == n.LastTurnEndedAt && prev.Snapshot.LastTurn == n.LastTurn {
			return "", false // the same turn end (or a session taken up again after its end)
		}
		if n.LastTurn == agentbridge.LastTurnFailed {
			return EventFailed, true
		}
		return EventDone, true
	}
	return "", false
}

type key struct{ source, id string }

// Tracker follows a stream's state (client.State) and turns its records
// into transitions, comparing each session's snapshot before and after a
// record. The first reset of a source is its baseline: it yields none. A
// reset after that (a client that reconnected) yields what changed
// meanwhile. The zero Tracker is ready; it is not safe for concurrent use.
type Tracker struct {
	// Host is put in every transition of a session that carries none (the
	// machine the bridge runs on).
	Host string
	// Now stamps transitions; nil: none (At 0).
	Now func() int64

	st     client.State
	primed map[string]bool // sources whose baseline reset came
}

// head is what the tracker reads of a record before the state applies it.
type head struct {
	Source    string `json:"source"`
	Host      string `json:"host"`
	SessionID string `json:"sessionId"`
	Snapshot  *struct {
		ID string `json:"id"`
	} `json:"snapshot"`
}

// Apply reads one stream record (its name and data) and returns the
// transitions it makes. Records it does not know, or cannot decode, make
// none.
func (t *Tracker) Apply(name string, data []byte) []Transition {
	if name != agentbridge.RecordReset && name != agentbridge.RecordUpsert && name != agentbridge.RecordRemove {
		return nil
	}
	var h head
	if json.Unmarshal(data, &h) != nil || h.Source == "" {
		return nil
	}
	before := map[string]agentbridge.Entry{}
	switch name {
	case agentbridge.RecordReset:
		for _, e := range t.st.Sessions() {
			if e.Source == h.Source && e.Host == h.Host {
				before[e.Snapshot.ID] = e
			}
		}
	case agentbridge.RecordUpsert:
		if h.Snapshot == nil {
			return nil
		}
		if e, ok := t.st.EntryOn(h.Host, h.Source, h.Snapshot.ID); ok {
			before[e.Snapshot.ID] = e
		}
	}
	if t.st.Apply(client.Event{ID: t.st.Revision() + 1, Name: name, Data: data}) != nil {
		return nil
	}
	var out []Transition
	tell := func(e agentbridge.Entry) {
		var prev *agentbridge.Entry
		if p, ok := before[e.Snapshot.ID]; ok {
			prev = &p
		}
		if tr, ok := t.transition(h.Source, h.Host, prev, &e); ok {
			out = append(out, tr)
		}
	}
	switch name {
	case agentbridge.RecordReset:
		if t.primed == nil {
			t.primed = map[string]bool{}
		}
		if k := h.Host + "/" + h.Source; !t.primed[k] { // a remote's sources have their own baseline
			t.primed[k] = true
			return nil // the baseline
		}
		for _, e := range t.st.Sessions() {
			if e.Source == h.Source && e.Host == h.Host {
				tell(e)
			}
		}
	case agentbridge.RecordUpsert:
		if e, ok := t.st.EntryOn(h.Host, h.Source, h.Snapshot.ID); ok {
			tell(e)
		}
	}
	return out
}

func (t *Tracker) transition(source, host string, prev, e *agentbridge.Entry) (Transition, bool) {
	ev, ok := Detect(prev, e)
	s := &e.Snapshot
	if !ok {
		return Transition{}, false
	}
	if host == "" {
		host = t.Host
	}
	// Display text is redacted by the hub; paths a push source put in it
	// are shortened here, since a notification leaves the machine; and it
	// is shown to people (a desktop notification, a chat a webhook posts
	// to): controls, bidi overrides and invisible characters are
	// neutralised (text.Printable), so that "approve \u202Etxt.exe"
	// does not show reordered.
	tr := Transition{Source: source, SessionID: s.ID, Harness: s.Harness, Status: ev,
		Title: text.Printable(cutPaths(s.Title)), WaitingFor: text.Printable(cutPaths(s.WaitingFor)), Host: host}
	if t.Now != nil {
		tr.At = t.Now()
	}
	tr.Text = tr.Summary("")
	return tr, true
}

// cutPaths shortens the paths in a text that leaves the machine: every
// path text.ShortenPaths finds, and also those it leaves because they
// are written in another form or do not follow one of its boundaries:
//
//   - "$HOME/…", "${HOME}/…" and "%USERPROFILE%\…" are paths in the home;
//   - percent-encoded separators ("%2Fhome%2Fu%2Fx") are separators;
//   - a path right after any other character that cannot be part of a
//     name ("<p>/home/u/x", "@/srv/x", "→/home/u/x", a zero-width space)
//     starts there;
//   - directory names with spaces: ShortenPaths ends a path at a space, so
//     "/home/u/My Projects/app/main.go" would leave "Projects/app/" behind.
//     The words after a shortened path, up to the last one of the same
//     clause (no word between ends with ',' ';' or '.') that goes on with
//     a separator, are the same path, and only that word's last element
//     stays ("…/main.go"). A relative path later in the same clause is cut
//     with it: more is cut than needed rather than a directory name left.
func cutPaths(s string) string {
	s = homeVars.Replace(s)
	if !strings.ContainsAny(s, `/\`) {
		return s
	}
	var b strings.Builder
	from := 0
	for i := 1; i < len(s); i++ {
		if (s[i] == '/' || s[i] == '\\') && startsHere(s[i-1]) {
			b.WriteString(text.ShortenPaths(s[from:i]))
			from = i
		}
	}
	b.WriteString(text.ShortenPaths(s[from:]))
	s = b.String()
	if !strings.Contains(s, "…/") {
		return s
	}
	words := strings.Split(s, " ")
	out := words[:0]
	for i := 0; i < len(words); i++ {
		w := words[i]
		if k := strings.LastIndex(w, "…/"); k >= 0 && !endsClause(w) {
			last := -1
			for j := i + 1; j < len(words); j++ {
				v := words[j]
				if strings.HasPrefix(v, "/") || strings.Contains(v, "…/") || strings.Contains(v, "://") {
					break
				}
				if strings.ContainsAny(v, `/\`) {
					last = j
				}
				if endsClause(v) {
					break
				}
			}
			if last > 0 {
				v := words[last]
				w = w[:k] + "…/" + v[strings.LastIndexAny(v, `/\`)+1:]
				i = last
			}
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// homeVars turns the spellings of a home directory in shell and Windows
// text, and percent-encoded separators, into the forms paths are found by.
var homeVars = strings.NewReplacer("${HOME}/", "~/", "$HOME/", "~/", "%USERPROFILE%\\", "~\\", "%USERPROFILE%/", "~/",
	"%2F", "/", "%2f", "/", "%5C", "\\", "%5c", "\\")

// startsHere reports whether a separator after c starts a path that
// ShortenPaths would not see: c is neither part of a name nor one of its
// boundaries (a letter, digit, '.', '-', '_', '~', ':' or another
// separator goes on with what was before).
func startsHere(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return false
	}
	return !strings.ContainsRune(".-_~:/\\ \t\n\r\"'`([{=,;%+", rune(c))
}

func endsClause(w string) bool { return w == "" || strings.ContainsAny(w[len(w)-1:], ",;.!?") }

// Notifier shows a transition to someone (Desktop does).
type Notifier interface {
	Notify(Transition) error
}

// Teller tells a Notifier the transitions of the chosen events that stream
// records make. A Notify that fails (the notification server restarted,
// the session bus is busy) is not the end: its transition is kept and told
// again later, after a backoff that doubles (Backoff to MaxBackoff), when
// the next record comes or when Flush is called at the time Record or
// Flush returned. At most MaxPending transitions wait, one per session
// (the newer replaces the older: a notification says the latest state).
type Teller struct {
	Tracker
	To     Notifier
	Events []string // nil: waiting, blocked and failed
	// OnError is told each failed Notify and when the next try is due
	// (nil: nothing).
	OnError    func(err error, retry time.Time)
	Backoff    time.Duration    // 0: 1 s
	MaxBackoff time.Duration    // 0: 1 min
	Clock      func() time.Time // nil: time.Now

	pending []Transition
	delay   time.Duration
	next    time.Time
}

// MaxPending bounds the transitions a Teller keeps while Notify fails.
const MaxPending = 64

// Record reads one stream record and tells what is due. It returns when a
// transition that could not be told is to be tried again (zero: none
// waits); call Flush then.
func (t *Teller) Record(name string, data []byte) time.Time {
	events := t.Events
	if events == nil {
		events = []string{EventWaiting, EventBlocked, EventFailed}
	}
	for _, tr := range t.Apply(name, data) {
		if slices.Contains(events, tr.Status) {
			t.keep(tr)
		}
	}
	return t.Flush()
}

func (t *Teller) keep(tr Transition) {
	t.pending = slices.DeleteFunc(t.pending, func(p Transition) bool {
		return p.Source == tr.Source && p.SessionID == tr.SessionID && p.Host == tr.Host
	})
	if len(t.pending) >= MaxPending {
		t.pending = t.pending[1:]
	}
	t.pending = append(t.pending, tr)
}

func (t *Teller) now() time.Time {
	if t.Clock != nil {
		return t.Clock()
	}
	return time.Now()
}

// Flush tells the transitions that wait, unless their next try is not due
// yet; it returns when the next try is due (zero: none waits).
func (t *Teller) Flush() time.Time {
	if len(t.pending) == 0 {
		return time.Time{}
	}
	now := t.now()
	if now.Before(t.next) {
		return t.next
	}
	for len(t.pending) > 0 {
		if err := t.To.Notify(t.pending[0]); err != nil {
			switch {
			case t.delay == 0 && t.Backoff > 0:
				t.delay = t.Backoff
			case t.delay == 0:
				t.delay = time.Second
			default:
				t.delay = min(2*t.delay, cmp.Or(t.MaxBackoff, time.Minute))
			}
			t.next = now.Add(t.delay)
			if t.OnError != nil {
				t.OnError(err, t.next)
			}
			return t.next
		}
		t.pending = t.pending[1:]
	}
	t.delay, t.next = 0, time.Time{}
	return time.Time{}
}
