package hub

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// Stream data shapes (docs/contract.md section 4).
type (
	resetData struct {
		Source   string                           `json:"source"`
		Host     string                           `json:"host,omitempty"`
		Sessions []agentbridge.Snapshot           `json:"sessions"`
		Activity map[string]*agentbridge.Activity `json:"activity,omitempty"`
		Ended    map[string]*agentbridge.Ended    `json:"ended,omitempty"`
	}
	upsertData struct {
		Source   string                `json:"source"`
		Host     string                `json:"host,omitempty"`
		Snapshot agentbridge.Snapshot  `json:"snapshot"`
		Activity *agentbridge.Activity `json:"activity,omitempty"`
		Ended    *agentbridge.Ended    `json:"ended,omitempty"`
	}
	removeData struct {
		Source    string `json:"source"`
		Host      string `json:"host,omitempty"`
		SessionID string `json:"sessionId"`
	}
	diagData struct {
		Source     string                 `json:"source"`
		Host       string                 `json:"host,omitempty"`
		Diagnostic agentbridge.Diagnostic `json:"diagnostic"`
	}
	lifecycleData struct {
		Source    string            `json:"source"`
		Host      string            `json:"host,omitempty"`
		SessionID string            `json:"sessionId"`
		Event     agentbridge.Event `json:"event"`
	}
	harnessesData struct {
		Source           string   `json:"source"`
		EnabledHarnesses []string `json:"enabledHarnesses"`
	}
)

// encode renders one record's data: compact JSON on one line. The shapes
// above cannot fail to marshal.
func encode(v any) []byte {
	if b, ok := fastEncode(v); ok {
		return b
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("hub: encode %T: %v", v, err))
	}
	return b
}

// txn is one atomic change to one source: an overlay over its sessions and
// the records it will emit. Nothing is visible until commit.
type txn struct {
	h     *Hub
	src   *source
	over  map[string]*sess // nil value: removed
	reset bool             // over is the whole new state
	pend  []pending
	facts []Fact // for the recorder (recorder.go)
}

type pending struct {
	e    *entry
	data any
}

func (h *Hub) begin(s *source) *txn { return &txn{h: h, src: s, over: map[string]*sess{}} }

func (t *txn) get(id string) *sess {
	if ss, ok := t.over[id]; ok || t.reset {
		return ss
	}
	return t.src.sessions[id]
}

func (t *txn) add(e *entry, data any) { t.pend = append(t.pend, pending{e, data}) }

// upsert makes ss the session's state with an upsert record; data is the
// record's data when it is encoded already (nil: encoded at commit).
func (t *txn) upsert(ss *sess, data []byte) {
	t.over[ss.snap.ID] = ss
	snap := ss.snap
	var d any
	if data == nil {
		d = upsertData{Source: t.src.info.ID, Host: t.src.host, Snapshot: snap, Activity: ss.act, Ended: ss.ended}
	}
	t.add(&entry{rec: Record{Name: agentbridge.RecordUpsert, Data: data}, source: t.src.info.ID, host: t.src.host, sessionID: snap.ID, snap: &snap, act: ss.act, ended: ss.ended}, d)
}

// put makes ss the session's state: an upsert record unless a client would
// see nothing new.
func (t *txn) put(ss *sess) {
	if old := t.get(ss.snap.ID); old != nil && old.same(ss) {
		t.over[ss.snap.ID] = ss
		return
	}
	t.upsert(ss, nil)
}

func (t *txn) remove(id string) {
	if t.get(id) == nil {
		return
	}
	if t.reset {
		delete(t.over, id)
	} else {
		t.over[id] = nil
	}
	t.add(&entry{rec: Record{Name: agentbridge.RecordRemove}, source: t.src.info.ID, host: t.src.host, sessionID: id},
		removeData{Source: t.src.info.ID, Host: t.src.host, SessionID: id})
}

// replaceAll makes items the source's whole state: a reset record with the
// first validate.MaxResetSessions of them, then upserts for the rest.
func (t *txn) replaceAll(keep map[string]*sess) {
	items := make([]*sess, 0, len(keep))
	for _, ss := range keep {
		items = append(items, ss)
	}
	slices.SortFunc(items, func(a, b *sess) int {
		if a.snap.ID < b.snap.ID {
			return -1
		}
		return 1
	})
	t.replace(items)
}

func (t *txn) replace(items []*sess) {
	t.over = make(map[string]*sess, len(items))
	t.reset = true
	head := items[:min(len(items), validate.MaxResetSessions)]
	snaps := make([]agentbridge.Snapshot, len(head))
	var acts map[string]*agentbridge.Activity
	var endeds map[string]*agentbridge.Ended
	for i, ss := range head {
		t.over[ss.snap.ID] = ss
		snaps[i] = ss.snap
		acts = addActivity(acts, ss.snap.ID, ss.act)
		endeds = addEnded(endeds, ss.snap.ID, ss.ended)
	}
	t.add(&entry{rec: Record{Name: agentbridge.RecordReset}, source: t.src.info.ID, host: t.src.host, sessions: snaps, acts: acts, endeds: endeds},
		resetData{Source: t.src.info.ID, Host: t.src.host, Sessions: snaps, Activity: acts, Ended: endeds})
	for _, ss := range items[len(head):] {
		t.upsert(ss, nil)
	}
}

// commit applies t to the hub: the state, its facts to the recorder, then
// one record per pending entry with the next revision, kept in the ring
// and handed to every subscriber. h.mu must be held.
func (h *Hub) commit(t *txn) {
	s := t.src
	if t.reset {
		s.sessions = make(map[string]*sess, len(t.over))
		for id, ss := range t.over {
			if ss != nil {
				s.sessions[id] = ss
			}
		}
	} else {
		for id, ss := range t.over {
			if ss == nil {
				delete(s.sessions, id)
			} else {
				s.sessions[id] = ss
			}
		}
	}
	h.record(t)
	if len(t.pend) == 0 {
		return
	}
	s.ver++
	for _, p := range t.pend {
		h.rev++
		h.reserve()
		e := p.e
		e.rec.Rev = h.rev
		if e.rec.Data == nil {
			e.rec.Data = encode(p.data)
		}
		if ev := h.ring.push(e); ev > h.floor {
			h.floor = ev
		}
		if d, ok := p.data.(diagData); ok {
			h.diags = keepDiagnostics(append(h.diags, agentbridge.DiagnosticEntry{Source: s.info.ID, Host: s.host, Revision: h.rev, Diagnostic: d.Diagnostic, At: h.now().UnixMilli()}))
		}
		h.met.published(e.rec.Name)
		h.deliver(e)
	}
	h.prunePartial()
}

// finish commits t unless there are issues.
func (h *Hub) finish(t *txn, issues []validate.Issue) error {
	if len(issues) > 0 {
		h.met.rejected(t.src.info.ID)
		return &InvalidError{Issues: issues}
	}
	h.commit(t)
	return nil
}

func nest(issues []validate.Issue, prefix string) []validate.Issue {
	if prefix == "$" || len(issues) == 0 {
		return issues
	}
	return validate.Nest(issues, prefix)
}

// opReset validates and applies a reset. items carry redacted snapshots.
// More than
// MaxResetSessions are refused when strict (push: the contract's limit);
// otherwise (a running source) the rest become upserts.
func (t *txn) opReset(prefix string, items []*sess, strict bool) []validate.Issue {
	snaps := make([]agentbridge.Snapshot, len(items))
	for i, ss := range items {
		snaps[i] = ss.snap
	}
	var issues []validate.Issue
	if strict || len(snaps) <= validate.MaxResetSessions {
		issues = validate.Reset(snaps, t.src.enabled)
	} else {
		issues = validate.Reset(snaps[:validate.MaxResetSessions], t.src.enabled)
		seen := make(map[string]bool, len(snaps))
		for _, s := range snaps[:validate.MaxResetSessions] {
			seen[s.ID] = true
		}
		for i := validate.MaxResetSessions; i < len(snaps); i++ {
			p := fmt.Sprintf("$[%d]", i)
			issues = append(issues, validate.Nest(validate.Snapshot(snaps[i], t.src.enabled), p)...)
			if seen[snaps[i].ID] {
				issues = append(issues, validate.Issue{Path: p, Code: validate.Duplicate, Message: "names a session id already in this reset"})
			}
			seen[snaps[i].ID] = true
		}
	}
	if len(issues) > 0 {
		return nest(issues, prefix)
	}
	t.replace(items)
	return nil
}

// opUpsert validates and applies one snapshot (put).
func (t *txn) opUpsert(prefix string, ss *sess) []validate.Issue {
	if issues := validate.Snapshot(ss.snap, t.src.enabled); len(issues) > 0 {
		return nest(issues, prefix)
	}
	t.put(ss)
	return nil
}

// idIssues checks a session id as an identity value.
func idIssues(id, path string) []validate.Issue {
	if validate.ValidID(id) {
		return nil
	}
	return []validate.Issue{{Path: path, Code: validate.InvalidID, Message: "must be 1-128 bytes of A-Z a-z 0-9 . _ : @ -"}}
}

// opDiagnostic validates and records a diagnostic.
func (t *txn) opDiagnostic(prefix string, d agentbridge.Diagnostic) []validate.Issue {
	validate.RedactDiagnostic(&d)
	if issues := validate.Diagnostic(d); len(issues) > 0 {
		return nest(issues, prefix)
	}
	t.add(&entry{rec: Record{Name: agentbridge.RecordDiagnostic}, source: t.src.info.ID},
		diagData{Source: t.src.info.ID, Diagnostic: d})
	return nil
}

// Publish applies the operations of a push source in order, all or
// nothing: every operation is checked against the state the earlier ones
// leave, and when any issue arises nothing is applied and an *InvalidError
// lists every issue, with paths from the array: "$[0].session.harness",
// "$[2].event.waitId", "$[1].sessions[3].id". (A caller that accepted a
// single object may rewrite the "$[0]" prefix to "$".) A reset may hold at
// most validate.MaxResetSessions sessions. It fails with ErrUnknownSource
// or ErrNotPush for a source that is not a push source.
//
// A push source is a source with no tailer: its operations go through
// the store a running source's Sink keeps (the same fold of an event,
// clock stamps and read times, hook fold and held hooks; see Sink), in
// one commit.
func (h *Hub) Publish(sourceID string, ops []agentbridge.Op) error {
	return h.publish(sourceID, ops, true)
}

// Check validates ops as Publish does, against the current state, and
// applies nothing. An op whose Op field is empty stands for an operation
// the caller could not decode: it is skipped (it changes nothing), and the
// paths of the others keep their index. It fails as Publish does.
func (h *Hub) Check(sourceID string, ops []agentbridge.Op) error {
	return h.publish(sourceID, ops, false)
}

func (h *Hub) publish(sourceID string, ops []agentbridge.Op, apply bool) error {
	h.mu.Lock()
	s, ok := h.sources[sourceID]
	h.mu.Unlock()
	if !ok || s.host != "" {
		return ErrUnknownSource
	}
	if s.run != nil || !s.info.Push {
		return ErrNotPush
	}
	return s.pub.batch(ops, apply)
}

// batch applies a push source's operations to its store in one commit,
// all or nothing, or (apply false) only checks them. Each operation takes
// the path of the running source's call that does the same (fold, put,
// reset, forget) and adds its records to the one transaction. The
// sessions the batch touches are copy-on-write clones (get), and the
// changes of the work map are noted (note): a batch that is not kept
// leaves the store as it was, and its facts (Options.Recorder) are
// dropped with its transaction.
func (p *publisher) batch(ops []agentbridge.Op, apply bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.h
	h.mu.Lock()
	defer h.mu.Unlock()
	gone, held := p.gone, slices.Clone(p.held)
	p.batches++
	p.open, p.goneShared = p.batches, true
	t := h.begin(p.src)
	var issues []validate.Issue
	for i, op := range ops {
		at := fmt.Sprintf("$[%d]", i)
		// Later operations are checked against the state the valid earlier
		// ones leave; a rejected one changes nothing.
		var got []validate.Issue
		switch op.Op {
		case "":
			if apply {
				got = []validate.Issue{{Path: at + ".op", Code: validate.MissingField, Message: "op is required"}}
			}
		case agentbridge.OpReset:
			ws := make([]*work, len(op.Sessions))
			for j, sn := range op.Sessions {
				ws[j] = pushed(sn)
			}
			got = p.reset(t, at+".sessions", ws, true)
		case agentbridge.OpUpsert:
			got = p.put(t, at+".session", pushed(op.Session))
		case agentbridge.OpRemove:
			if got = idIssues(op.SessionID, at+".sessionId"); len(got) == 0 {
				p.forget(op.SessionID)
			}
		case agentbridge.OpDiagnostic:
			got = t.opDiagnostic(at+".diagnostic", op.Diagnostic)
		case agentbridge.OpEvent:
			got = p.fold(op.SessionID, op.Harness, op.Event, intake{prefix: at, strict: true, locked: true})
		default:
			got = []validate.Issue{{Path: at + ".op", Code: validate.InvalidEnum, Message: "op must be one of reset, upsert, remove, diagnostic, event"}}
		}
		p.drain(t)
		issues = append(issues, got...)
	}
	if !apply || len(issues) > 0 { // the store as it was
		if p.replaced != nil {
			p.work = p.replaced
		}
		for i := len(p.undo) - 1; i >= 0; i-- { // the first change of an entry last
			if u := p.undo[i]; u.w == nil {
				delete(p.work, u.id)
			} else {
				p.work[u.id] = u.w
			}
		}
		p.gone, p.held = gone, held
		clear(p.pend)
		p.pend, p.dirty = p.pend[:0], nil
	}
	clear(p.undo)
	p.open, p.undo, p.replaced, p.goneShared = 0, p.undo[:0], nil, false
	if !apply {
		return invalid(issues)
	}
	return h.finish(t, issues)
}

// defaultStatus gives a pushed snapshot without a status (optional, as
// for the host) the status idle, which the bridge always shows.
func defaultStatus(s *agentbridge.Snapshot) {
	if s.Status == "" {
		s.Status = agentbridge.StatusIdle
	}
}

// addActivity adds a session's activity to a reset's map (made when the
// first one is not empty).
func addActivity(m map[string]*agentbridge.Activity, id string, a *agentbridge.Activity) map[string]*agentbridge.Activity {
	if a.IsZero() {
		return m
	}
	if m == nil {
		m = map[string]*agentbridge.Activity{}
	}
	m[id] = a
	return m
}

// addEnded adds a session's end to a reset's map (made when the first one
// is not nil).
func addEnded(m map[string]*agentbridge.Ended, id string, e *agentbridge.Ended) map[string]*agentbridge.Ended {
	if e == nil {
		return m
	}
	if m == nil {
		m = map[string]*agentbridge.Ended{}
	}
	m[id] = e
	return m
}

// same reports whether two sessions look the same to a client.
func (ss *sess) same(o *sess) bool {
	return snapshotEqual(&ss.snap, &o.snap) && ss.act.Equal(o.act) && ss.ended.Equal(o.ended)
}

// Per-origin bounds of the recent diagnostics (DefaultDiagnostics in all):
// one remote keeps at most MaxRemoteDiagnostics, all remotes together at
// most half, so that a remote that floods its diagnostics never pushes out
// this bridge's own.
const MaxRemoteDiagnostics = DefaultDiagnostics / 4

// keepDiagnostics bounds the recent diagnostics after one was appended:
// the oldest of its remote when that remote holds more than
// MaxRemoteDiagnostics, the oldest remote one when the remotes hold more
// than half, the oldest of all past DefaultDiagnostics.
func keepDiagnostics(d []agentbridge.DiagnosticEntry) []agentbridge.DiagnosticEntry {
	host := d[len(d)-1].Host
	if host != "" {
		same, remote, firstSame, firstRemote := 0, 0, -1, -1
		for i, e := range d {
			if e.Host == "" {
				continue
			}
			if remote++; firstRemote < 0 {
				firstRemote = i
			}
			if e.Host == host {
				if same++; firstSame < 0 {
					firstSame = i
				}
			}
		}
		switch {
		case same > MaxRemoteDiagnostics:
			d = slices.Delete(d, firstSame, firstSame+1)
		case remote > DefaultDiagnostics/2:
			d = slices.Delete(d, firstRemote, firstRemote+1)
		}
	}
	if n := len(d) - DefaultDiagnostics; n > 0 {
		d = slices.Delete(d, 0, n)
	}
	return d
}
