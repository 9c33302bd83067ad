package hub

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// Bounds of what one remote may make the hub hold.
const (
	// MaxRemoteSources is the most sources of one remote the hub keeps.
	MaxRemoteSources = 64
	// MaxRemoteSessions is the most sessions of one remote the hub keeps;
	// the remote's further new sessions are left out (one diagnostic says
	// so) until some of its sessions leave.
	MaxRemoteSessions = 4096
)

// RemoteSource is the source id of the diagnostics the bridge itself
// records about a remote (unreachable, refused the token, left out
// sessions); they carry the remote's id as their host.
const RemoteSource = "remote"

// Remote is the hub's side of another bridge whose sessions this one shows
// beside its own. Every entry and record of the remote's sessions carries
// its id as host. The hub keeps them per source of the remote, checks them
// by the same rules as its own and redacts them again; a session whose
// harness this bridge declares for the same source and has switched off is
// kept out of view (and comes back when the harness is switched on).
//
// A Remote is fed the remote's stream records (Apply) by one goroutine;
// its methods are safe for concurrent use.
type Remote struct {
	h      *Hub
	id     string
	diag   *source   // the pseudo source of the bridge's own diagnostics about the remote
	srcs   []*source // the remote's sources, in the order first seen
	n      int       // sessions held, in view or not
	capped bool      // the session bound was reported and still holds
}

// RemoteRecord is one record of a remote's stream, decoded. Records of any
// other name (harnesses, names newer than this bridge) are ignored: this
// bridge's own switches decide what is shown.
type RemoteRecord struct {
	Name       string                           // reset, upsert, remove, lifecycle or diagnostic
	Source     string                           // the remote's source id
	Sessions   []agentbridge.Snapshot           // reset
	Activity   map[string]*agentbridge.Activity // reset: by session id; upsert: under the session's id
	Ended      map[string]*agentbridge.Ended    // reset: by session id; upsert: under the session's id
	Snapshot   agentbridge.Snapshot             // upsert
	SessionID  string                           // remove, lifecycle
	Event      agentbridge.Event                // lifecycle
	Diagnostic agentbridge.Diagnostic           // diagnostic
}

// AddRemote registers a remote bridge by its id: lowercase
// [a-z][a-z0-9-]{0,63}, unique, and never agentbridge.LocalHost.
func (h *Hub) AddRemote(id string) (*Remote, error) {
	if !validate.ValidHarnessID(id) || id == agentbridge.LocalHost {
		return nil, fmt.Errorf("hub: add remote %q: an id is lowercase [a-z][a-z0-9-]{0,63} and not %q", id, agentbridge.LocalHost)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.remotes == nil {
		h.remotes = map[string]*Remote{}
	}
	if _, ok := h.remotes[id]; ok {
		return nil, fmt.Errorf("hub: add remote %q: duplicate id", id)
	}
	r := &Remote{h: h, id: id, diag: &source{info: agentbridge.SourceInfo{ID: RemoteSource}, host: id, sessions: map[string]*sess{}, ctx: context.Background()}}
	h.remotes[id] = r
	return r, nil
}

// ID is the remote's id: the host of its sessions.
func (r *Remote) ID() string { return r.id }

// Diagnostic records a problem of the remote itself (source RemoteSource,
// host the remote's id). The message must carry no path, URL credential or
// token.
func (r *Remote) Diagnostic(code, message string) {
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.begin(r.diag)
	if issues := t.opDiagnostic("$", agentbridge.Diagnostic{Code: code, Message: message}); len(issues) > 0 {
		h.log.Error("hub: a remote diagnostic failed validation", "remote", r.id, "code", code)
		return
	}
	h.commit(t)
}

// Leave drops every session of the remote (one empty reset per source that
// had any): the remote has been out of reach for longer than the linger.
// Its sessions come back with its next records.
func (r *Remote) Leave() {
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range r.srcs {
		if len(s.all) == 0 && len(s.sessions) == 0 {
			continue
		}
		clear(s.all)
		t := h.begin(s)
		t.replaceAll(nil)
		h.commit(t)
	}
	r.n, r.capped = 0, false
}

// Sessions returns how many sessions of the remote the hub holds, in view
// or not.
func (r *Remote) Sessions() int {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return r.n
}

// source returns the remote's source id, making it when it is new; nil
// when id is not a source id or the remote has too many.
func (r *Remote) source(id string) *source {
	h := r.h
	if s := h.sources[sourceKey(r.id, id)]; s != nil {
		return s
	}
	if !validate.ValidHarnessID(id) || len(r.srcs) >= MaxRemoteSources {
		return nil
	}
	s := &source{info: agentbridge.SourceInfo{ID: id}, host: r.id, sessions: map[string]*sess{}, all: map[string]*sess{}, ctx: context.Background()}
	h.sources[sourceKey(r.id, id)] = s
	h.remote = append(h.remote, s)
	r.srcs = append(r.srcs, s)
	return s
}

// visible reports whether a remote session of source s is in view: this
// bridge does not declare that harness for a source of the same id, or has
// it switched on. h.mu must be held.
func (h *Hub) visible(s *source, snap *agentbridge.Snapshot) bool {
	local := h.sources[s.info.ID]
	if local == nil || local.host != "" {
		return true
	}
	on, declared := local.enabled[snap.Harness]
	return on || !declared
}

// switchRemotes shows or hides the remote sessions of a harness of local,
// which was just switched: a reset for every remote source of the same id
// whose sessions in view change. h.mu must be held.
func (h *Hub) switchRemotes(local *source) {
	for _, s := range h.remote {
		if s.info.ID != local.info.ID {
			continue
		}
		vis := map[string]*sess{}
		for id, ss := range s.all {
			if h.visible(s, &ss.snap) {
				vis[id] = ss
			}
		}
		if len(vis) == len(s.sessions) && maps.EqualFunc(vis, s.sessions, func(a, b *sess) bool { return a == b }) {
			continue
		}
		t := h.begin(s)
		t.replaceAll(vis)
		h.commit(t)
	}
}

// cleanActivity makes a remote's activity safe to show: the tool name
// redacted and bounded like any label, times and counts not negative; nil
// when nothing is left.
func cleanActivity(a *agentbridge.Activity) *agentbridge.Activity {
	if a.IsZero() {
		return nil
	}
	c := &agentbridge.Activity{StatusSince: max(0, a.StatusSince), TurnStartedAt: max(0, a.TurnStartedAt)}
	if a.Tool != nil {
		if name := validate.Label(text.Redact(a.Tool.Name)); name != "" {
			c.Tool = &agentbridge.ToolActivity{Name: name, Since: max(0, a.Tool.Since)}
		}
	}
	if u := a.Usage; u != nil && u.InputTokens >= 0 && u.OutputTokens >= 0 && u.CacheReadTokens >= 0 && u.CacheWriteTokens >= 0 {
		c.Usage = &agentbridge.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	}
	if c.IsZero() {
		return nil
	}
	return c
}

// cleanEnded makes a remote's end of a session safe to show: the signal
// and reason bounded like any label, the time not negative, an exit code
// within the event's range; nil for nil.
func cleanEnded(e *agentbridge.Ended) *agentbridge.Ended {
	if e == nil {
		return nil
	}
	c := &agentbridge.Ended{At: max(0, min(e.At, validate.MaxEpochMillis)),
		Signal: text.Bound(text.Redact(e.Signal), validate.MaxSignal), Reason: validate.Label(text.Redact(e.Reason))}
	if e.ExitCode != nil && *e.ExitCode >= validate.MinExitCode && *e.ExitCode <= validate.MaxExitCode {
		code := *e.ExitCode
		c.ExitCode = &code
	}
	return c
}

// checkSnapshot validates and redacts one snapshot of a remote.
func checkRemote(snap *agentbridge.Snapshot) bool {
	if len(validate.Snapshot(*snap, nil)) > 0 {
		return false
	}
	*snap = snap.Clone()
	validate.RedactSnapshot(snap)
	defaultStatus(snap)
	return true
}

// Apply folds a batch of the remote's records into the hub, in order. The
// batch is the unit of coalescing: an upsert or remove of a session that a
// later record of the batch replaces is left out (a lifecycle record is
// still given, decided by the snapshot its session has after the event),
// so that a remote flooding the stream costs this bridge and its clients
// one record per changed session and batch. What a record carries is
// checked by the host's rules; a record that breaks them is left out and
// counted in the result.
//
// With a recorder (Options.Recorder) each lifecycle record of a session
// the hub holds, in view or not, and each session a reset or upsert of
// the batch makes the hub hold (Event.Kind "", with the remote's usage
// totals) is a Fact with Host set, handed out by the commit of its source;
// remotes carry no folds, so none is Fresh. A held session that a remove
// record or a reset takes away without its session.stopped having come is
// told as one (goneFact).
func (r *Remote) Apply(recs []RemoteRecord) (rejected int) {
	n := len(recs)
	skip := make([]bool, n)
	for i := range recs {
		rc := &recs[i]
		switch rc.Name {
		case agentbridge.RecordReset:
			keep := rc.Sessions[:0:0]
			seen := map[string]bool{}
			for _, snap := range rc.Sessions {
				if !checkRemote(&snap) || seen[snap.ID] {
					rejected++
					continue
				}
				seen[snap.ID] = true
				keep = append(keep, snap)
			}
			rc.Sessions = keep
		case agentbridge.RecordUpsert:
			skip[i] = !checkRemote(&rc.Snapshot)
		case agentbridge.RecordRemove:
			skip[i] = !validate.ValidID(rc.SessionID)
		case agentbridge.RecordLifecycle:
			validate.RedactEvent(&rc.Event)
			skip[i] = !validate.ValidID(rc.SessionID) || len(validate.Event(rc.Event)) > 0
		case agentbridge.RecordDiagnostic:
			validate.RedactDiagnostic(&rc.Diagnostic)
			skip[i] = len(validate.Diagnostic(rc.Diagnostic)) > 0
		default:
			skip[i] = true
			continue
		}
		if skip[i] {
			rejected++
		}
	}
	// Look ahead: what a later record of the batch replaces, and the
	// snapshot each lifecycle record leaves its session with.
	type key struct{ src, id string }
	next := map[key]int{} // the next upsert (index) or remove (-1) of a session
	reset := map[string]bool{}
	after := make([]*agentbridge.Snapshot, n)
	for i := n - 1; i >= 0; i-- {
		rc := &recs[i]
		if skip[i] {
			continue
		}
		switch rc.Name {
		case agentbridge.RecordReset:
			reset[rc.Source] = true
			for k := range next { // what follows the reset says nothing of the source before it
				if k.src == rc.Source {
					delete(next, k)
				}
			}
		case agentbridge.RecordUpsert:
			k := key{rc.Source, rc.Snapshot.ID}
			if _, later := next[k]; later || reset[rc.Source] {
				skip[i] = true
			}
			next[k] = i
		case agentbridge.RecordRemove:
			k := key{rc.Source, rc.SessionID}
			if _, later := next[k]; later || reset[rc.Source] {
				skip[i] = true
			}
			next[k] = -1
		case agentbridge.RecordLifecycle:
			if j, ok := next[key{rc.Source, rc.SessionID}]; ok && j >= 0 {
				after[i] = &recs[j].Snapshot
			}
		}
	}

	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	var now int64 // the time of the facts (Options.Recorder)
	if h.rec != nil {
		now = h.now().UnixMilli()
	}
	var t *txn
	for i := range recs {
		rc := &recs[i]
		if skip[i] {
			continue
		}
		s := r.source(rc.Source)
		if s == nil {
			rejected++
			continue
		}
		if t == nil || t.src != s {
			if t != nil {
				h.commit(t)
			}
			t = h.begin(s)
		}
		switch rc.Name {
		case agentbridge.RecordReset:
			if h.rec != nil {
				r.goneFacts(t, s, rc.Sessions, now)
			}
			r.n -= len(s.all)
			clear(s.all)
			vis := map[string]*sess{}
			for _, snap := range rc.Sessions {
				if !r.room() {
					break
				}
				ss := &sess{snap: snap, act: cleanActivity(rc.Activity[snap.ID]), ended: cleanEnded(rc.Ended[snap.ID])}
				s.all[snap.ID] = ss
				r.n++
				if h.rec != nil {
					t.facts = append(t.facts, wholeFact(r.id, s.info.ID, &ss.snap, ss.act, ss.ended, now))
				}
				if h.visible(s, &snap) {
					vis[snap.ID] = ss
				}
			}
			t.replaceAll(vis)
		case agentbridge.RecordUpsert:
			id := rc.Snapshot.ID
			if s.all[id] == nil {
				if !r.room() {
					continue
				}
				r.n++
			}
			ss := &sess{snap: rc.Snapshot, act: cleanActivity(rc.Activity[id]), ended: cleanEnded(rc.Ended[id])}
			s.all[id] = ss
			if h.rec != nil {
				t.facts = append(t.facts, wholeFact(r.id, s.info.ID, &ss.snap, ss.act, ss.ended, now))
			}
			if h.visible(s, &ss.snap) {
				t.put(ss)
			} else {
				t.remove(id)
			}
		case agentbridge.RecordRemove:
			if held := s.all[rc.SessionID]; held != nil {
				if h.rec != nil && !held.stopped {
					t.facts = append(t.facts, goneFact(r.id, s.info.ID, held, now))
				}
				delete(s.all, rc.SessionID)
				r.n--
				r.capped = r.capped && r.n >= MaxRemoteSessions
			}
			t.remove(rc.SessionID)
		case agentbridge.RecordLifecycle:
			if h.rec != nil {
				r.lifecycleFact(t, s, rc, after[i], now)
				if held := s.all[rc.SessionID]; held != nil && rc.Event.Kind == agentbridge.KindSessionStopped {
					held.stopped = true // its remove tells the recorder nothing more
				}
			}
			snap := after[i]
			if snap == nil || !h.visible(s, snap) {
				snap = nil
				if cur := t.get(rc.SessionID); cur != nil {
					snap = &cur.snap
				}
			}
			if snap == nil {
				continue // a session this bridge does not show
			}
			at := *snap
			t.add(&entry{rec: Record{Name: agentbridge.RecordLifecycle}, source: s.info.ID, host: r.id, sessionID: rc.SessionID, snap: &at},
				lifecycleData{Source: s.info.ID, Host: r.id, SessionID: rc.SessionID, Event: rc.Event})
		case agentbridge.RecordDiagnostic:
			t.add(&entry{rec: Record{Name: agentbridge.RecordDiagnostic}, source: s.info.ID, host: r.id},
				diagData{Source: s.info.ID, Host: r.id, Diagnostic: rc.Diagnostic})
		}
	}
	if t != nil {
		h.commit(t)
	}
	return rejected
}

// room reports whether the remote may hold one more session; the first
// refusal records a diagnostic. h.mu must be held.
func (r *Remote) room() bool {
	if r.n < MaxRemoteSessions {
		return true
	}
	if !r.capped {
		r.capped = true
		t := r.h.begin(r.diag)
		t.opDiagnostic("$", agentbridge.Diagnostic{Code: "remote-too-many-sessions",
			Message: fmt.Sprintf("remote %s reports more than %d sessions; the rest are left out", r.id, MaxRemoteSessions)})
		r.h.commit(t)
	}
	return false
}

// goneFacts notes in t that the sessions of s a reset leaves out (kept:
// the sessions it keeps) are gone, in order of id: they ended while the
// remote was out of reach, or were removed there. h.mu must be held and
// the hub must have a recorder.
func (r *Remote) goneFacts(t *txn, s *source, kept []agentbridge.Snapshot, now int64) {
	if len(s.all) == 0 {
		return
	}
	in := make(map[string]bool, len(kept))
	for i := range kept {
		in[kept[i].ID] = true
	}
	for _, id := range slices.Sorted(maps.Keys(s.all)) {
		if held := s.all[id]; !in[id] && !held.stopped {
			t.facts = append(t.facts, goneFact(r.id, s.info.ID, held, now))
		}
	}
}

// goneFact is the fact of a remote's session that left this bridge
// without its session.stopped reaching it (a remove record, a reset that
// leaves it out): a session.stopped at now, the hub's clock, so that a
// recorder ends its open turn and waits. A remote out of reach (Leave)
// tells none: its sessions may go on.
func goneFact(host, source string, held *sess, now int64) Fact {
	f := wholeFact(host, source, &held.snap, held.act, held.ended, now)
	f.Event.Kind = agentbridge.KindSessionStopped
	return f
}

// lifecycleFact notes the fact of a remote's lifecycle record in t, in
// view or not: the session as the batch leaves it (after: its upsert later
// in the batch, else the one the hub holds), with its usage and end as the
// hub holds them (the upsert that follows brings the new ones); the event
// at its own time, else now. A session the hub does not hold and will not
// make room for has none. h.mu must be held.
func (r *Remote) lifecycleFact(t *txn, s *source, rc *RemoteRecord, after *agentbridge.Snapshot, now int64) {
	held := s.all[rc.SessionID]
	snap := after
	switch {
	case held == nil && (after == nil || r.n >= MaxRemoteSessions):
		return
	case snap == nil:
		snap = &held.snap
	}
	var act *agentbridge.Activity
	var ended *agentbridge.Ended
	if held != nil {
		act, ended = held.act, held.ended
	}
	f := wholeFact(r.id, s.info.ID, snap, act, ended, now)
	f.Event = rc.Event
	if f.Event.OccurredAt == 0 {
		f.Event.OccurredAt = now
	}
	t.facts = append(t.facts, f)
}
