package codex

import (
	"bytes"
	"slices"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// Meta is what a rollout's session_meta (and turn_context) says about its
// thread. Ids are safe identity values (see safeID).
type Meta struct {
	ID             string // the thread id
	Parent         string // the spawning thread, for a subagent thread
	Subagent       bool   // session_meta.source names a subagent
	Cwd            string // absolute and clean, or ""
	CLIVersion     string
	Source         string // "cli", "vscode", "exec", "mcp", "subagent", …
	Nickname       string // subagent nickname, display text
	Role           string // subagent role, display text
	ApprovalPolicy string // from the latest turn_context: "never", "on-request", …
}

// Rollout maps the records of one rollout file, line by line, to the
// lifecycle events of its own thread. It decodes only the fields it needs,
// never keeps or publishes conversation content beyond a bounded, redacted
// title, and never fails: a line it cannot use is skipped. Subagent
// signals from the parent's collab records come out as subagent.started /
// subagent.done events for the caller (see tree) to check.
//
// Turns: since Codex persists task_started / task_complete / turn_aborted,
// those delimit turns. A rollout without them (older Codex) gets inferred
// turns: a real user message starts one (id "turn-<line>"), and the final
// agent message ends it: one with phase "final_answer" at once, otherwise
// an agent message with no tool call after it when the records written so
// far run out (Flush).
//
// A Rollout is not safe for concurrent use.
type Rollout struct {
	meta     Meta
	metaSeen bool
	line     int

	pid     int
	started bool // session.started emitted

	model     string // last model published (or to publish with session.started)
	titleText string // last title published (or to publish)
	named     bool   // the title is a thread name, not the first prompt

	taskEvents bool // the rollout persists task events: no inference
	bare       bool // the oldest format: response items without an envelope
	bad        bool // the last line was not a JSON object
	eventMsgs  bool // event_msg records seen (so prefer them to response items)

	turnOpen    bool
	turnErr     bool
	turnErrText string // why the turn failed, as an error record or task_complete said (display text)
	inferred    bool   // a turn has been inferred from a user message
	pendingDone bool   // inferred: an agent message ended the records so far
	pendingAt   int64

	usage *agentbridge.Usage // the last token totals published

	kind      string         // the record type of the last line (Kind)
	tools     []string       // open tool ids, in start order
	exitCodes map[string]int // call_id → exit code from *_end records
}

// NewRollout returns a mapper for one rollout. pid, when not 0, is the
// process holding the rollout open; it goes into session.started.
func NewRollout(pid int) *Rollout {
	return &Rollout{pid: pid}
}

// Meta returns what the rollout has said about its thread so far; ok is
// false before its session_meta.
func (r *Rollout) Meta() (m Meta, ok bool) { return r.meta, r.metaSeen }

// knownTypes are the record types of Codex's rollouts (RolloutItem): a
// line of another type is a kind this mapping does not know.
var knownTypes = map[string]bool{"session_meta": true, "turn_context": true, "event_msg": true, "response_item": true, "compacted": true}

// Kind returns the record type of the last line given to Line ("" when it
// had none the mapping reads: not JSON, or of the oldest formats) and
// whether the mapping knows it (the drift canary: sources.Sessions.Record).
func (r *Rollout) Kind() (kind string, known bool) { return r.kind, knownTypes[r.kind] }

// Bad reports whether the last line given to Line was not a JSON object
// (lines are checked as far as they are decoded: a record skipped by its
// type is not checked further).
func (r *Rollout) Bad() bool { return r.bad }

// envelope is a record line in its general form; the current format is
// {timestamp, type, payload}, the oldest one has the item's own fields at
// the top level.
type envelope struct {
	Timestamp  string         `json:"timestamp"`
	Type       string         `json:"type"`
	Payload    jsontext.Value `json:"payload"`
	RecordType string         `json:"record_type"`
	ID         string         `json:"id"`
}

// typeOnly decodes a payload's tag.
type typeOnly struct {
	Type string `json:"type"`
}

// Line maps one complete JSONL line (without its newline) and appends the
// resulting events to dst.
func (r *Rollout) Line(dst []agentbridge.Event, line []byte) []agentbridge.Event {
	r.line++
	r.bad = false
	r.kind = ""
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' {
		r.bad = len(line) > 0
		return dst
	}
	// payload stays nil on the fast path: the fields needed are then
	// decoded from the whole line through a {"payload": …} wrapper
	var payload []byte
	ts, typ, ptype, ok := peek(line)
	r.kind = typ
	if !ok {
		var env envelope
		if json.Unmarshal(line, &env) != nil {
			r.bad = true
			return dst
		}
		ts, typ = env.Timestamp, env.Type
		r.kind = typ
		switch {
		case len(env.Payload) > 0 && env.Payload[0] == '{':
			payload = env.Payload
			if typ == "event_msg" || typ == "response_item" {
				var t typeOnly
				if json.Unmarshal(env.Payload, &t) != nil {
					return dst
				}
				ptype = t.Type
			}
		case env.RecordType != "":
			return dst // oldest format: {"record_type":"state"}
		case typ == "" && env.ID != "" && !r.metaSeen:
			r.bare = true
			return r.sessionMeta(dst, line, line)
		case typ != "" && len(env.Payload) == 0 && r.bare:
			// oldest format: a bare response item
			ptype, typ, payload = typ, "response_item", line
			r.kind = typ
		default:
			return dst
		}
	}
	at := sources.Millis(ts)
	switch typ {
	case "session_meta":
		return r.sessionMeta(dst, line, payload)
	case "turn_context":
		return r.turnContext(dst, line, payload)
	case "event_msg":
		r.eventMsgs = true
		return r.eventMsg(dst, ptype, line, payload, at)
	case "response_item":
		return r.responseItem(dst, ptype, line, payload, at)
	}
	return dst
}

// Flush is called when the records written so far have been read. It emits
// session.started if a session_meta is still unannounced, and ends an
// inferred turn whose last record was the agent's answer.
func (r *Rollout) Flush(dst []agentbridge.Event) []agentbridge.Event {
	dst = r.ensureStarted(dst)
	if r.pendingDone && r.turnOpen && !r.taskEvents {
		dst = r.endTurn(dst, agentbridge.OutcomeSuccess, r.pendingAt)
	}
	return dst
}

// SetName sets the thread's name (from session_index.jsonl); a name beats
// the first prompt as title. It returns the agent.metadata to publish, if
// any.
func (r *Rollout) SetName(dst []agentbridge.Event, name string) []agentbridge.Event {
	t := validate.Title(name)
	if t == "" {
		return dst
	}
	r.named = true
	return r.setTitle(dst, t)
}

// decode decodes v from the payload: the split-off bytes, or the whole
// line's "payload" member.
func decode(line, payload []byte, v any) bool {
	if payload != nil {
		return json.Unmarshal(payload, v) == nil
	}
	w := struct {
		Payload any `json:"payload"`
	}{Payload: v}
	return json.Unmarshal(line, &w) == nil
}

// ---- turns, tools, announcements ----

// reopenInferred handles agent activity after an inferred turn end (the
// rollout had only been written up to the agent's message): the turn goes
// on, so it is reported running again under a new turn id.
func (r *Rollout) reopenInferred(dst []agentbridge.Event, at int64) []agentbridge.Event {
	r.pendingDone = false
	if r.taskEvents || r.turnOpen || !r.inferred {
		return dst
	}
	return r.startTurn(dst, lineID("turn", r.line), at)
}

func (r *Rollout) userMessage(dst []agentbridge.Event, text string, at int64) []agentbridge.Event {
	if !r.named && r.titleText == "" {
		if t := validate.Title(text); t != "" {
			dst = r.setTitle(dst, t)
		}
	}
	if r.taskEvents {
		return dst
	}
	// inferred turn
	r.inferred = true
	if r.turnOpen && r.pendingDone {
		dst = r.endTurn(dst, agentbridge.OutcomeSuccess, r.pendingAt)
	}
	return r.startTurn(dst, lineID("turn", r.line), at)
}

func (r *Rollout) agentMessage(dst []agentbridge.Event, phase string, at int64) []agentbridge.Event {
	if phase == "final_answer" {
		return r.endTurn(dst, agentbridge.OutcomeSuccess, at)
	}
	if phase == "commentary" || len(r.tools) > 0 {
		r.pendingDone = false
		return dst
	}
	r.pendingDone, r.pendingAt = true, at
	return dst
}

func (r *Rollout) startTurn(dst []agentbridge.Event, id string, at int64) []agentbridge.Event {
	dst = r.ensureStarted(dst)
	if !r.started {
		return dst
	}
	r.turnOpen, r.turnErr, r.turnErrText, r.pendingDone = true, false, "", false
	return append(dst, agentbridge.Event{Kind: agentbridge.KindTurnStarted, OccurredAt: at, TurnID: id})
}

func (r *Rollout) endTurn(dst []agentbridge.Event, out agentbridge.Outcome, at int64) []agentbridge.Event {
	if !r.started {
		return dst
	}
	toolOut := agentbridge.Outcome("")
	if out == agentbridge.OutcomeCancelled {
		toolOut = agentbridge.OutcomeCancelled
	}
	for _, id := range r.tools {
		dst = append(dst, agentbridge.Event{Kind: agentbridge.KindToolFinished, OccurredAt: at, ToolID: id, Outcome: toolOut})
	}
	r.tools = r.tools[:0]
	clear(r.exitCodes)
	e := agentbridge.Event{Kind: agentbridge.KindAgentDone, OccurredAt: at, Outcome: out}
	if out == agentbridge.OutcomeError {
		e.Summary = r.turnErrText
	}
	r.turnOpen, r.turnErr, r.turnErrText, r.pendingDone = false, false, "", false
	return append(dst, e)
}

// maxOpenTools bounds the open tool calls tracked per rollout; calls past it
// are not reported (a runaway rollout cannot grow the bridge's memory).
const maxOpenTools = 256

func (r *Rollout) startTool(dst []agentbridge.Event, id, name string, at int64) []agentbridge.Event {
	dst = r.ensureStarted(dst)
	if !r.started || slices.Contains(r.tools, id) || len(r.tools) >= maxOpenTools {
		return dst
	}
	r.tools = append(r.tools, id)
	return append(dst, agentbridge.Event{Kind: agentbridge.KindToolStarted, OccurredAt: at, ToolID: id, Name: name})
}

// keepTools drops the open tools v does not show open (the session's
// fold closed them).
func (r *Rollout) keepTools(v fold.View) {
	r.tools = slices.DeleteFunc(r.tools, func(id string) bool { return !v.ToolOpen(id) })
}

func (r *Rollout) finishTool(dst []agentbridge.Event, id string, out agentbridge.Outcome, at int64) []agentbridge.Event {
	i := slices.Index(r.tools, id)
	if i < 0 {
		return dst // not open: finished with its turn, or never reported
	}
	r.tools = slices.Delete(r.tools, i, i+1)
	return append(dst, agentbridge.Event{Kind: agentbridge.KindToolFinished, OccurredAt: at, ToolID: id, Outcome: out})
}

func (r *Rollout) setTitle(dst []agentbridge.Event, t string) []agentbridge.Event {
	if t == r.titleText {
		return dst
	}
	r.titleText = t
	if !r.started {
		return dst // joins session.started
	}
	return append(dst, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Title: t})
}

func (r *Rollout) setModel(dst []agentbridge.Event, m string) []agentbridge.Event {
	if m == r.model {
		return dst
	}
	r.model = m
	if !r.started {
		return dst
	}
	return append(dst, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Model: m})
}

// ensureStarted emits session.started once the session_meta is known.
func (r *Rollout) ensureStarted(dst []agentbridge.Event) []agentbridge.Event {
	if r.started || !r.metaSeen {
		return dst
	}
	r.started = true
	return append(dst, r.state())
}

// state is session.started as the records read so far describe the
// session. It carries no occurredAt: the session_meta's time says when the
// thread began, not when its current process did (a resumed thread), and
// the shared pid binding would take a process started later for a reused
// pid; the pid here comes from a live scan of who holds the rollout, so
// it cannot be stale.
func (r *Rollout) state() agentbridge.Event {
	return agentbridge.Event{
		Kind:  agentbridge.KindSessionStarted,
		Title: r.titleText, Model: r.model, Cwd: r.meta.Cwd, PID: r.pid,
	}
}

// ---- helpers ----

// peek reads the envelope of the current format without decoding it:
// {"timestamp":"…","type":"…","payload":{"type":"…" — the order Codex
// writes. ok is false for any other shape, which then takes the general
// path.
func peek(line []byte) (ts, typ, ptype string, ok bool) {
	rest, ok := cutPrefix(line, `{"timestamp":"`)
	if !ok {
		return
	}
	ts, rest, ok = plainString(rest)
	if !ok {
		return
	}
	if rest, ok = cutPrefix(rest, `,"type":"`); !ok {
		return
	}
	typ, rest, ok = plainString(rest)
	if !ok {
		return
	}
	if rest, ok = cutPrefix(rest, `,"payload":{`); !ok {
		return
	}
	if typ != "event_msg" && typ != "response_item" {
		return ts, typ, "", true
	}
	if rest, ok = cutPrefix(rest, `"type":"`); !ok {
		return
	}
	ptype, _, ok = plainString(rest)
	return
}

func cutPrefix(b []byte, p string) ([]byte, bool) {
	if len(b) < len(p) || string(b[:len(p)]) != p {
		return b, false
	}
	return b[len(p):], true
}

// plainString reads a JSON string body up to its closing quote; ok is false
// when it has escapes (the general path handles those).
func plainString(b []byte) (string, []byte, bool) {
	for i := 0; i < len(b) && i < 256; i++ {
		switch b[i] {
		case '"':
			return string(b[:i]), b[i+1:], true
		case '\\':
			return "", b, false
		}
	}
	return "", b, false
}
