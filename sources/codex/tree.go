package codex

import (
	"slices"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/validate"
)

// Pub is one lifecycle event for one session, as the source publishes it.
type Pub struct {
	Session string            `json:"session"`
	Event   agentbridge.Event `json:"event"`
}

// maxDepth bounds a walk up the parent links (a malformed rollout could
// name itself or make a cycle).
const maxDepth = 16

// thread is what the engine knows of one Codex thread: a root session, or
// a subagent folded into the session of its root.
type thread struct {
	id     string
	parent string // the spawning thread, for a subagent
	sub    bool
	root   bool // a root whose session.started went out
	file   bool // its own rollout is followed

	// as a subagent
	title, typ string
	ran        bool                // subagent.started was decided (its own meta or the parent's spawn record)
	done       bool                // ended (its own turn end or the parent's collab records)
	outcome    agentbridge.Outcome // when done
	at, doneAt int64               // occurredAt of its start and end, when known
	announced  string              // the root session it was published under
}

// Engine turns the lines of every rollout of one CODEX_HOME into the
// lifecycle events of its sessions: one session per root thread, and each
// subagent thread (source.subagent) folded into the session of its root as
// subagent.started / subagent.done, never as a session of its own. It is
// pure (no I/O) and not safe for concurrent use; the Source drives it from
// one goroutine, the golden tests from a file.
//
// Keys name rollout files: the file name without ".jsonl" / ".jsonl.zst",
// so that a rollout compressed in place keeps its key.
type Engine struct {
	files   map[string]*fileState
	threads map[string]*thread
	names   map[string]string // thread id → name from session_index.jsonl
	events  []agentbridge.Event
	out     []Pub
	bad     bool
	kind    string // Kind
	known   bool
	// views, when set (SetViews), gives the view of a root session's
	// fold: a root rollout's open tools are kept to the ones it has open.
	views func(session string) fold.View
}

// SetViews makes the engine read a root session's fold (fold.View) before
// it maps the next line of its rollout: a tool the fold closed (an
// agent.exited folded when the process died, the journal never closing
// the tool) is no longer open for the rollout either, so that its late
// end or the end of a resumed turn does not finish it a second time. A
// subagent's rollout is no session and keeps its own tools.
func (e *Engine) SetViews(views func(session string) fold.View) { e.views = views }

// loadView keeps a root rollout's open tools to the ones its fold has
// open.
func (e *Engine) loadView(f *fileState) {
	if e.views != nil && f.thread != nil && f.thread.root {
		f.r.keepTools(e.views(f.thread.id))
	}
}

type fileState struct {
	r      *Rollout
	thread *thread // once the rollout's session_meta is read
	pid    int
}

// NewEngine returns an empty engine.
func NewEngine() *Engine {
	return &Engine{files: map[string]*fileState{}, threads: map[string]*thread{}, names: map[string]string{}}
}

// Open starts, or restarts from its first line, the rollout with key; pid
// is its holding process or 0. The threads it named stay known: a root
// session is announced again by its next session.started (the caller
// restarts the session: sources.Sessions.Restart), with its subagents.
func (e *Engine) Open(key string, pid int) {
	if f := e.files[key]; f != nil && f.thread != nil && f.thread.root {
		f.thread.root = false
		for _, c := range e.threads {
			if c.announced == f.thread.id {
				c.announced = ""
			}
		}
	}
	e.files[key] = &fileState{r: NewRollout(pid), pid: pid}
}

// Known reports whether the rollout with key is open.
func (e *Engine) Known(key string) bool { _, ok := e.files[key]; return ok }

// Line maps one line of the rollout with key (opening it when new) and
// returns the events to publish; the slice is reused by the next call.
func (e *Engine) Line(key string, line []byte) []Pub {
	e.out = e.out[:0]
	f := e.file(key)
	e.loadView(f)
	e.events = f.r.Line(e.events[:0], line)
	e.bad = f.r.Bad()
	e.kind, e.known = f.r.Kind()
	e.route(f)
	return e.out
}

// Kind returns the record type of the last line given to Line and whether
// the mapping knows it (Rollout.Kind).
func (e *Engine) Kind() (kind string, known bool) { return e.kind, e.known }

// Bad reports whether the last line given to Line was not a JSON object.
func (e *Engine) Bad() bool { return e.bad }

// Flush says the rollout with key has been read to its end for now.
func (e *Engine) Flush(key string) []Pub {
	e.out = e.out[:0]
	f, ok := e.files[key]
	if !ok {
		return e.out
	}
	e.loadView(f)
	e.events = f.r.Flush(e.events[:0])
	e.route(f)
	return e.out
}

// Thread returns the thread id of the rollout with key and whether it is a
// root session (not a subagent); ok is false before its session_meta.
func (e *Engine) Thread(key string) (id string, root bool, ok bool) {
	f := e.files[key]
	if f == nil || f.thread == nil {
		return "", false, false
	}
	return f.thread.id, !f.thread.sub, true
}

// Meta returns what the rollout with key said about its thread.
func (e *Engine) Meta(key string) (Meta, bool) {
	f := e.files[key]
	if f == nil {
		return Meta{}, false
	}
	return f.r.Meta()
}

// SetName records a thread name from session_index.jsonl (the latest entry
// per id wins) and returns the agent.metadata to publish, if the thread is
// a known root.
func (e *Engine) SetName(id, name string) []Pub {
	e.out = e.out[:0]
	id = validate.SafeID(id)
	if id == "" || e.names[id] == name {
		return e.out
	}
	e.names[id] = name
	for _, f := range e.files {
		if f.thread != nil && f.thread.id == id && !f.thread.sub {
			e.events = f.r.SetName(e.events[:0], name)
			e.route(f)
		}
	}
	return e.out
}

// Close forgets the rollout with key. A root session stops (with its
// subagents); a subagent's entry stays in its root's session as it is.
func (e *Engine) Close(key string) []Pub {
	e.out = e.out[:0]
	f := e.files[key]
	if f == nil {
		return e.out
	}
	delete(e.files, key)
	t := f.thread
	if t == nil {
		return e.out
	}
	t.file = false
	if t.root {
		t.root = false
		e.out = append(e.out, Pub{t.id, agentbridge.Event{Kind: agentbridge.KindSessionStopped, Reason: "rollout closed"}})
		for _, c := range e.threads {
			if c.announced == t.id {
				c.announced = ""
			}
		}
	}
	if !t.sub || !t.ran {
		delete(e.threads, t.id)
	}
	return e.out
}

// Reset forgets everything but the thread names (before a rescan).
func (e *Engine) Reset() {
	clear(e.files)
	clear(e.threads)
}

// Restate returns session.started for the root session of the rollout with
// key as the records read so far describe it (title, model, cwd, pid), for
// a session that the caller had to drop while its rollout went on (an
// exited session that lingered out, then resumed).
func (e *Engine) Restate(key string, pid int) []Pub {
	e.out = e.out[:0]
	f := e.files[key]
	if f == nil || f.thread == nil || !f.thread.root {
		return e.out
	}
	ev := f.r.state()
	if pid > 0 {
		ev.PID = pid
	}
	e.out = append(e.out, Pub{f.thread.id, ev})
	return e.out
}

// Roots returns the ids of the root sessions published, sorted.
func (e *Engine) Roots() []string {
	var ids []string
	for _, t := range e.threads {
		if t.root {
			ids = append(ids, t.id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (e *Engine) file(key string) *fileState {
	f := e.files[key]
	if f == nil {
		f = &fileState{r: NewRollout(0)}
		e.files[key] = f
	}
	return f
}

// route sends the events a rollout produced to the right session.
func (e *Engine) route(f *fileState) {
	if f.thread == nil {
		m, ok := f.r.Meta()
		if !ok {
			return
		}
		f.thread = e.bind(m)
		if f.thread == nil {
			return // a subagent whose parent cannot be known: never a root
		}
	}
	t := f.thread
	for _, ev := range e.events {
		switch ev.Kind {
		case agentbridge.KindSubagentStarted:
			e.childStarted(ev.SubagentID, ev.ParentAgentID, ev.Title, ev.Type, ev.OccurredAt)
			continue
		case agentbridge.KindSubagentDone:
			e.childDone(ev.SubagentID, ev.Outcome, ev.OccurredAt)
			continue
		}
		if t.sub {
			e.subEvent(t, f, ev)
			continue
		}
		if ev.Kind == agentbridge.KindSessionStarted {
			t.root = true
			e.out = append(e.out, Pub{t.id, ev})
			if name, ok := e.names[t.id]; ok {
				for _, mev := range f.r.SetName(nil, name) {
					e.out = append(e.out, Pub{t.id, mev})
				}
			}
			e.announcePending()
			continue
		}
		if t.root {
			e.out = append(e.out, Pub{t.id, ev})
		}
	}
}

// bind registers the thread a rollout's session_meta names.
func (e *Engine) bind(m Meta) *thread {
	if m.Subagent && m.Parent == "" {
		return nil
	}
	t := e.threads[m.ID]
	if t == nil {
		t = &thread{id: m.ID}
		e.threads[m.ID] = t
	}
	t.file = true
	if m.Subagent {
		t.sub, t.parent = true, m.Parent
		if m.Nickname != "" {
			t.title = m.Nickname
		}
		if m.Role != "" {
			t.typ = m.Role
		}
	}
	return t
}

// subEvent folds an event of a subagent's own rollout into its entry.
func (e *Engine) subEvent(t *thread, f *fileState, ev agentbridge.Event) {
	switch ev.Kind {
	case agentbridge.KindSessionStarted:
		if t.title == "" {
			t.title = ev.Title
		}
		e.childStarted(t.id, t.parent, t.title, t.typ, ev.OccurredAt)
	case agentbridge.KindAgentMetadata:
		if t.title == "" && ev.Title != "" {
			t.title = ev.Title
		}
	case agentbridge.KindAgentDone:
		// A later turn of the same subagent (more work sent by the parent)
		// cannot be shown: the contract has no event that makes a finished
		// subagent run again, so it stays at its first outcome.
		e.childDone(t.id, ev.Outcome, ev.OccurredAt)
	}
}

// childStarted records a subagent thread (from its own session_meta or the
// parent's spawn record) and publishes it once its root is known.
func (e *Engine) childStarted(id, parent, title, typ string, at int64) {
	if id == "" || parent == "" || id == parent {
		return
	}
	t := e.threads[id]
	if t == nil {
		t = &thread{id: id}
		e.threads[id] = t
	}
	if !t.sub {
		if t.root {
			return // a thread already published as a root is not re-bound
		}
		t.sub, t.parent = true, parent
	}
	if t.title == "" {
		t.title = title
	}
	if t.typ == "" {
		t.typ = typ
	}
	t.ran = true
	if t.at == 0 {
		t.at = at
	}
	if t.announced == "" {
		if root := e.rootOf(t); root != "" {
			e.announce(t, root)
		}
	}
}

// childDone ends a subagent (its own turn end or the parent's collab
// record); unknown threads and ended ones are left alone.
func (e *Engine) childDone(id string, out agentbridge.Outcome, at int64) {
	t := e.threads[id]
	if t == nil || !t.sub || t.done {
		return
	}
	t.done, t.outcome, t.doneAt = true, out, at
	if t.announced != "" {
		e.out = append(e.out, Pub{t.announced, agentbridge.Event{Kind: agentbridge.KindSubagentDone, OccurredAt: at, SubagentID: t.id, Outcome: out}})
	}
}

// announce publishes subagent.started (and subagent.done when it already
// ended) under root, within the contract's bound on subagents.
func (e *Engine) announce(t *thread, root string) {
	n := 0
	for _, c := range e.threads {
		if c.announced == root {
			n++
		}
	}
	if n >= validate.MaxSubagents {
		return
	}
	t.announced = root
	e.out = append(e.out, Pub{root, agentbridge.Event{
		Kind: agentbridge.KindSubagentStarted, OccurredAt: t.at, SubagentID: t.id, ParentAgentID: t.parent,
		Title: t.title, Type: t.typ,
	}})
	if t.done {
		e.out = append(e.out, Pub{root, agentbridge.Event{Kind: agentbridge.KindSubagentDone, OccurredAt: t.doneAt, SubagentID: t.id, Outcome: t.outcome}})
	}
}

// announcePending publishes the subagents whose root just became known,
// in id order.
func (e *Engine) announcePending() {
	var ids []string
	for _, t := range e.threads {
		if t.sub && t.ran && t.announced == "" {
			ids = append(ids, t.id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		t := e.threads[id]
		if root := e.rootOf(t); root != "" {
			e.announce(t, root)
		}
	}
}

// rootOf walks up a subagent's parents to the published root session; ""
// while that root is not known.
func (e *Engine) rootOf(t *thread) string {
	for range maxDepth {
		p := e.threads[t.parent]
		if p == nil {
			return ""
		}
		if p.root {
			return p.id
		}
		if !p.sub {
			return ""
		}
		t = p
	}
	return ""
}

// pid returns the holding process the rollout with key was opened with.
func (e *Engine) pid(key string) int {
	if f := e.files[key]; f != nil {
		return f.pid
	}
	return 0
}
