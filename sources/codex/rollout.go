package codex

import (
	"bytes"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge"
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
	startAt int64

	model     string // last model published (or to publish with session.started)
	titleText string // last title published (or to publish)
	named     bool   // the title is a thread name, not the first prompt

	taskEvents bool // the rollout persists task events: no inference
	bare       bool // the oldest format: response items without an envelope
	bad        bool // the last line was not a JSON object
	eventMsgs  bool // event_msg records seen (so prefer them to response items)

	turnOpen    bool
	turnID      string
	turnErr     bool
	inferred    bool // a turn has been inferred from a user message
	pendingDone bool // inferred: an agent message ended the records so far
	pendingAt   int64

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

// Bad reports whether the last line given to Line was not a JSON object
// (lines are checked as far as they are decoded: a record skipped by its
// type is not checked further).
func (r *Rollout) Bad() bool { return r.bad }

// Started reports whether session.started has been emitted.
func (r *Rollout) Started() bool { return r.started }

// TurnOpen reports whether a turn is in progress.
func (r *Rollout) TurnOpen() bool { return r.turnOpen }

// SetPID records the process holding the rollout. It only takes effect
// before session.started.
func (r *Rollout) SetPID(pid int) { r.pid = pid }

// envelope is a record line in its general form; the current format is
// {timestamp, type, payload}, the oldest one has the item's own fields at
// the top level.
type envelope struct {
	Timestamp  string          `json:"timestamp"`
	Type       string          `json:"type"`
	Payload    json.RawMessage `json:"payload"`
	RecordType string          `json:"record_type"`
	ID         string          `json:"id"`
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
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' {
		r.bad = len(line) > 0
		return dst
	}
	// payload stays nil on the fast path: the fields needed are then
	// decoded from the whole line through a {"payload": …} wrapper
	var payload []byte
	ts, typ, ptype, ok := peek(line)
	if !ok {
		var env envelope
		if json.Unmarshal(line, &env) != nil {
			r.bad = true
			return dst
		}
		ts, typ = env.Timestamp, env.Type
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
			return r.sessionMeta(dst, line, line, millis(ts))
		case typ != "" && len(env.Payload) == 0 && r.bare:
			// oldest format: a bare response item
			ptype, typ, payload = typ, "response_item", line
		default:
			return dst
		}
	}
	at := millis(ts)
	switch typ {
	case "session_meta":
		return r.sessionMeta(dst, line, payload, at)
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
	t := title(name)
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

// ---- session_meta and turn_context ----

type sessionMetaPayload struct {
	ID             string          `json:"id"`
	Timestamp      string          `json:"timestamp"`
	Cwd            string          `json:"cwd"`
	CLIVersion     string          `json:"cli_version"`
	Source         json.RawMessage `json:"source"`
	ParentThreadID string          `json:"parent_thread_id"`
	AgentNickname  string          `json:"agent_nickname"`
	AgentRole      string          `json:"agent_role"`
}

type threadSpawn struct {
	ParentThreadID string `json:"parent_thread_id"`
	AgentNickname  string `json:"agent_nickname"`
	AgentRole      string `json:"agent_role"`
}

func (r *Rollout) sessionMeta(dst []agentbridge.Event, line, payload []byte, at int64) []agentbridge.Event {
	if r.metaSeen {
		// Later session_meta records are history replayed into a fork or a
		// resumed thread: the first one names this rollout's thread.
		return dst
	}
	var p sessionMetaPayload
	if !decode(line, payload, &p) {
		return dst
	}
	id := safeID(p.ID)
	if id == "" {
		return dst
	}
	r.metaSeen = true
	r.meta.ID = id
	r.meta.Cwd = cleanCwd(p.Cwd)
	r.meta.CLIVersion = displayName(p.CLIVersion)
	r.meta.Nickname = displayName(p.AgentNickname)
	r.meta.Role = displayName(p.AgentRole)
	parent := p.ParentThreadID
	if len(p.Source) > 0 {
		switch p.Source[0] {
		case '"':
			var s string
			if json.Unmarshal(p.Source, &s) == nil {
				r.meta.Source = displayName(s)
			}
		case '{':
			var src struct {
				Subagent json.RawMessage `json:"subagent"`
			}
			if json.Unmarshal(p.Source, &src) == nil && len(src.Subagent) > 0 && string(src.Subagent) != "null" {
				r.meta.Subagent = true
				r.meta.Source = "subagent"
				var sa struct {
					ThreadSpawn *threadSpawn `json:"thread_spawn"`
				}
				if src.Subagent[0] == '{' && json.Unmarshal(src.Subagent, &sa) == nil && sa.ThreadSpawn != nil {
					if sa.ThreadSpawn.ParentThreadID != "" {
						parent = sa.ThreadSpawn.ParentThreadID
					}
					if r.meta.Nickname == "" {
						r.meta.Nickname = displayName(sa.ThreadSpawn.AgentNickname)
					}
					if r.meta.Role == "" {
						r.meta.Role = displayName(sa.ThreadSpawn.AgentRole)
					}
				} else if src.Subagent[0] == '"' {
					var kind string
					if json.Unmarshal(src.Subagent, &kind) == nil && r.meta.Role == "" {
						r.meta.Role = displayName(kind) // "review", "compact"
					}
				}
			}
		}
	}
	if r.meta.Subagent {
		r.meta.Parent = safeID(parent)
	}
	r.startAt = at
	if r.startAt == 0 {
		r.startAt = millis(p.Timestamp)
	}
	// session.started is emitted lazily (ensureStarted), so that a model,
	// title or cwd read just after can join it
	return dst
}

type turnContextPayload struct {
	TurnID         string `json:"turn_id"`
	Cwd            string `json:"cwd"`
	Model          string `json:"model"`
	ApprovalPolicy string `json:"approval_policy"`
}

func (r *Rollout) turnContext(dst []agentbridge.Event, line, payload []byte) []agentbridge.Event {
	var p turnContextPayload
	if !decode(line, payload, &p) {
		return dst
	}
	if p.ApprovalPolicy != "" {
		r.meta.ApprovalPolicy = displayName(p.ApprovalPolicy)
	}
	if r.meta.Cwd == "" {
		if r.meta.Cwd = cleanCwd(p.Cwd); r.meta.Cwd != "" && r.started {
			// session_meta named no cwd: a repeated session.started sets
			// it (the fold keeps the status of a known session)
			dst = append(dst, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: r.meta.Cwd})
		}
	}
	if m := displayName(p.Model); m != "" {
		dst = r.setModel(dst, m)
	}
	return dst
}

// ---- event_msg ----

type turnPayload struct {
	TurnID string          `json:"turn_id"`
	Reason string          `json:"reason"` // turn_aborted
	Error  json.RawMessage `json:"error"`  // task_complete
}

type userMessagePayload struct {
	Message string `json:"message"`
}

type agentMessagePayload struct {
	Phase string `json:"phase"`
}

type threadNamePayload struct {
	ThreadName string `json:"thread_name"`
}

type commandEndPayload struct {
	CallID   string `json:"call_id"`
	ExitCode *int   `json:"exit_code"` // exec_command_end
	Success  *bool  `json:"success"`   // patch_apply_end
	Result   *struct {
		Err json.RawMessage `json:"Err"`
	} `json:"result"` // mcp_tool_call_end
}

type spawnEndPayload struct {
	SenderThreadID   string `json:"sender_thread_id"`
	NewThreadID      string `json:"new_thread_id"`
	NewAgentNickname string `json:"new_agent_nickname"`
	NewAgentRole     string `json:"new_agent_role"`
}

type agentStatus struct {
	ThreadID string          `json:"thread_id"`
	Status   json.RawMessage `json:"status"`
}

type waitingEndPayload struct {
	AgentStatuses []agentStatus              `json:"agent_statuses"`
	Statuses      map[string]json.RawMessage `json:"statuses"`
}

type closeEndPayload struct {
	ReceiverThreadID string          `json:"receiver_thread_id"`
	Status           json.RawMessage `json:"status"`
}

func (r *Rollout) eventMsg(dst []agentbridge.Event, ptype string, line, payload []byte, at int64) []agentbridge.Event {
	switch ptype {
	case "task_started", "turn_started":
		var p turnPayload
		if !decode(line, payload, &p) {
			return dst
		}
		r.taskEvents = true
		id := safeID(p.TurnID)
		if id == "" {
			id = lineID("turn", r.line)
		}
		return r.startTurn(dst, id, at)
	case "task_complete", "turn_complete":
		var p turnPayload
		if !decode(line, payload, &p) {
			return dst
		}
		r.taskEvents = true
		if !r.turnOpen {
			return dst // no turn to end (a repeated or stray record)
		}
		out := agentbridge.OutcomeSuccess
		if (len(p.Error) > 0 && string(p.Error) != "null") || r.turnErr {
			out = agentbridge.OutcomeError
		}
		return r.endTurn(r.ensureStarted(dst), out, at)
	case "turn_aborted":
		var p turnPayload
		if !decode(line, payload, &p) {
			return dst
		}
		r.taskEvents = true
		if !r.turnOpen {
			return dst
		}
		out := agentbridge.OutcomeCancelled
		if p.Reason == "budget_limited" {
			out = agentbridge.OutcomeError
		}
		return r.endTurn(r.ensureStarted(dst), out, at)
	case "error":
		r.turnErr = true
		if !r.taskEvents && r.turnOpen {
			return r.endTurn(dst, agentbridge.OutcomeError, at)
		}
		return dst
	case "user_message":
		if r.taskEvents && r.titleText != "" {
			return dst // nothing in it is needed
		}
		var p userMessagePayload
		if !decode(line, payload, &p) {
			return dst
		}
		return r.userMessage(dst, p.Message, at)
	case "agent_message":
		if r.taskEvents || !r.turnOpen {
			return dst
		}
		var p agentMessagePayload
		if !decode(line, payload, &p) {
			return dst
		}
		return r.agentMessage(dst, p.Phase, at)
	case "thread_name_updated":
		var p threadNamePayload
		if !decode(line, payload, &p) {
			return dst
		}
		return r.SetName(dst, p.ThreadName)
	case "exec_command_end", "patch_apply_end", "mcp_tool_call_end":
		var p commandEndPayload
		if !decode(line, payload, &p) {
			return dst
		}
		id := safeID(p.CallID)
		if id == "" {
			return dst
		}
		code := -1
		switch {
		case p.ExitCode != nil:
			code = *p.ExitCode
		case p.Success != nil && *p.Success:
			code = 0
		case p.Success != nil:
			code = 1
		case p.Result != nil && len(p.Result.Err) > 0 && string(p.Result.Err) != "null":
			code = 1
		case p.Result != nil:
			code = 0
		}
		if code >= 0 {
			if r.exitCodes == nil {
				r.exitCodes = make(map[string]int)
			}
			if len(r.exitCodes) < 4096 {
				r.exitCodes[id] = code
			}
		}
		return dst
	case "collab_agent_spawn_end":
		var p spawnEndPayload
		if !decode(line, payload, &p) {
			return dst
		}
		child := safeID(p.NewThreadID)
		if child == "" {
			return dst
		}
		sender := safeID(p.SenderThreadID)
		if sender == "" {
			sender = r.meta.ID
		}
		if sender == "" {
			return dst
		}
		dst = r.ensureStarted(dst)
		return append(dst, agentbridge.Event{
			Kind: agentbridge.KindSubagentStarted, OccurredAt: at,
			SubagentID: child, ParentAgentID: sender,
			Title: displayName(p.NewAgentNickname), Type: displayName(p.NewAgentRole),
		})
	case "collab_waiting_end":
		var p waitingEndPayload
		if !decode(line, payload, &p) {
			return dst
		}
		dst = r.ensureStarted(dst)
		for _, s := range p.AgentStatuses {
			dst = appendChildStatus(dst, s.ThreadID, s.Status, at)
		}
		keys := make([]string, 0, len(p.Statuses))
		for k := range p.Statuses {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			dst = appendChildStatus(dst, k, p.Statuses[k], at)
		}
		return dst
	case "collab_close_end":
		var p closeEndPayload
		if !decode(line, payload, &p) {
			return dst
		}
		id := safeID(p.ReceiverThreadID)
		if id == "" {
			return dst
		}
		out, ok := agentOutcome(p.Status)
		if !ok {
			out = agentbridge.OutcomeCancelled // closed while still running
		}
		dst = r.ensureStarted(dst)
		return append(dst, agentbridge.Event{Kind: agentbridge.KindSubagentDone, OccurredAt: at, SubagentID: id, Outcome: out})
	}
	return dst
}

// appendChildStatus appends subagent.done for a child whose status (Codex's
// AgentStatus) is final.
func appendChildStatus(dst []agentbridge.Event, thread string, status json.RawMessage, at int64) []agentbridge.Event {
	id := safeID(thread)
	if id == "" {
		return dst
	}
	out, ok := agentOutcome(status)
	if !ok {
		return dst
	}
	return append(dst, agentbridge.Event{Kind: agentbridge.KindSubagentDone, OccurredAt: at, SubagentID: id, Outcome: out})
}

// agentOutcome maps Codex's AgentStatus ("running", {"completed": …},
// {"errored": …}, "shutdown", "interrupted", "not_found", …) to an outcome;
// ok is false while the agent still runs or the status is unknown.
func agentOutcome(status json.RawMessage) (agentbridge.Outcome, bool) {
	status = bytes.TrimSpace(status)
	if len(status) == 0 {
		return "", false
	}
	var name string
	switch status[0] {
	case '"':
		if json.Unmarshal(status, &name) != nil {
			return "", false
		}
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(status, &m) != nil || len(m) != 1 {
			return "", false
		}
		for k := range m {
			name = k
		}
	default:
		return "", false
	}
	switch strings.ToLower(name) {
	case "completed":
		return agentbridge.OutcomeSuccess, true
	case "errored", "failed", "error":
		return agentbridge.OutcomeError, true
	case "shutdown", "interrupted", "not_found", "notfound", "cancelled", "closed":
		return agentbridge.OutcomeCancelled, true
	}
	return "", false
}

// ---- response_item ----

type callPayload struct {
	ID     string          `json:"id"`
	CallID string          `json:"call_id"`
	Name   string          `json:"name"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
}

type messagePayload struct {
	Role    string `json:"role"`
	Phase   string `json:"phase"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func (r *Rollout) responseItem(dst []agentbridge.Event, ptype string, line, payload []byte, at int64) []agentbridge.Event {
	switch ptype {
	case "function_call", "custom_tool_call", "local_shell_call", "tool_search_call":
		var p callPayload
		if !decode(line, payload, &p) {
			return dst
		}
		id := safeID(p.CallID)
		if id == "" {
			id = safeID(p.ID)
		}
		if id == "" {
			id = lineID("call", r.line)
		}
		name := displayName(p.Name)
		if name == "" {
			name = strings.TrimSuffix(ptype, "_call")
		}
		dst = r.reopenInferred(dst, at)
		return r.startTool(dst, id, name, at)
	case "web_search_call":
		// persisted once the search is over: it starts and ends here
		var p callPayload
		if !decode(line, payload, &p) {
			return dst
		}
		id := safeID(p.CallID)
		if id == "" {
			id = safeID(p.ID)
		}
		if id == "" {
			id = lineID("search", r.line)
		}
		dst = r.reopenInferred(dst, at)
		n := len(dst)
		dst = r.startTool(dst, id, "web_search", at)
		if len(dst) == n {
			return dst
		}
		out := agentbridge.OutcomeSuccess
		if p.Status == "failed" || p.Status == "incomplete" {
			out = agentbridge.OutcomeError
		}
		return r.finishTool(dst, id, out, at)
	case "function_call_output", "custom_tool_call_output", "tool_search_output", "local_shell_call_output":
		var p callPayload
		if !decode(line, payload, &p) {
			return dst
		}
		id := safeID(p.CallID)
		if id == "" {
			return dst
		}
		return r.finishTool(dst, id, r.toolOutcome(id, p.Output), at)
	case "message":
		// The envelope formats duplicate prompts and answers as event_msg
		// records; only the oldest format needs the response items.
		if !r.bare || r.eventMsgs {
			return dst
		}
		var p messagePayload
		if !decode(line, payload, &p) {
			return dst
		}
		switch p.Role {
		case "user":
			for _, c := range p.Content {
				if c.Type == "input_text" {
					if cwd, ok := environmentCwd(c.Text); ok {
						if r.meta.Cwd == "" {
							r.meta.Cwd = cwd
						}
						return dst
					}
					return r.userMessage(dst, c.Text, at)
				}
			}
		case "assistant":
			if !r.taskEvents && r.turnOpen {
				return r.agentMessage(dst, p.Phase, at)
			}
		}
	case "reasoning":
		if !r.taskEvents {
			r.pendingDone = false
		}
	}
	return dst
}

// toolOutcome decides how a tool ended: from an exit code of an *_end
// record, or from the exit code the output itself reports. It returns ""
// (no outcome) when neither says.
func (r *Rollout) toolOutcome(id string, output json.RawMessage) agentbridge.Outcome {
	code, ok := r.exitCodes[id]
	if ok {
		delete(r.exitCodes, id)
	} else {
		code, ok = outputExitCode(output)
	}
	switch {
	case !ok:
		return ""
	case code == 0:
		return agentbridge.OutcomeSuccess
	default:
		return agentbridge.OutcomeError
	}
}

// outputExitCode finds the exit code a shell tool's output reports, looking
// only at its head: "Process exited with code N" / "Exit code: N" lines, or
// the older JSON form {"output": …, "metadata": {"exit_code": N}}.
func outputExitCode(output json.RawMessage) (int, bool) {
	if len(output) < 2 || output[0] != '"' {
		return 0, false
	}
	head := output
	if len(head) > 512 {
		head = head[:512]
	}
	for _, marker := range []string{"Process exited with code ", "Exit code: "} {
		if i := bytes.Index(head, []byte(marker)); i >= 0 {
			return leadingInt(head[i+len(marker):])
		}
	}
	if bytes.HasPrefix(output, []byte(`"{`)) {
		// the older form: a JSON document in a JSON string; metadata
		// follows the whole output, so it is found from the end
		i := bytes.LastIndex(output, []byte(`\"exit_code\":`))
		if i >= 0 {
			return leadingInt(output[i+len(`\"exit_code\":`):])
		}
	}
	return 0, false
}

func leadingInt(b []byte) (int, bool) {
	n, i, neg := 0, 0, false
	if i < len(b) && b[i] == '-' {
		neg, i = true, i+1
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' && i-start < 9 {
		n = n*10 + int(b[i]-'0')
		i++
	}
	if i == start {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// environmentCwd recognises the injected <environment_context> message of
// older rollouts and returns the cwd it names; ok is true for every
// injected message (environment, instructions), which is never a prompt.
func environmentCwd(text string) (string, bool) {
	t := strings.TrimSpace(text)
	switch {
	case strings.HasPrefix(t, "<environment_context>"):
		if i := strings.Index(t, "<cwd>"); i >= 0 {
			rest := t[i+len("<cwd>"):]
			if j := strings.Index(rest, "</cwd>"); j >= 0 {
				return cleanCwd(rest[:j]), true
			}
		}
		return "", true
	case strings.HasPrefix(t, "<user_instructions>"), strings.HasPrefix(t, "<permissions instructions>"),
		strings.HasPrefix(t, "# AGENTS.md"), strings.HasPrefix(t, "<INSTRUCTIONS>"),
		strings.HasPrefix(t, "<turn_aborted>"), strings.HasPrefix(t, "<user_shell_command>"):
		return "", true
	}
	return "", false
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
		if t := title(text); t != "" {
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
	r.turnOpen, r.turnID, r.turnErr, r.pendingDone = true, id, false, false
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
	r.turnOpen, r.turnErr, r.pendingDone = false, false, false
	return append(dst, agentbridge.Event{Kind: agentbridge.KindAgentDone, OccurredAt: at, Outcome: out})
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
// session.
func (r *Rollout) state() agentbridge.Event {
	return agentbridge.Event{
		Kind: agentbridge.KindSessionStarted, OccurredAt: r.startAt,
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

// millis parses a record timestamp (RFC 3339) to epoch milliseconds; 0
// when it is missing or malformed (then no occurredAt is given).
func millis(ts string) int64 {
	if ts == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return 0
	}
	ms := t.UnixMilli()
	if ms < 0 {
		return 0
	}
	return ms
}

// cleanCwd returns p when it is an absolute, clean path the contract
// accepts, a cleaned form when cleaning makes it one, else "".
func cleanCwd(p string) string {
	if p == "" || p[0] != '/' || len(p) > 4096 || strings.IndexByte(p, 0) >= 0 || !utf8Valid(p) {
		return ""
	}
	return path.Clean(p)
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
