package codex

import (
	"bytes"
	"slices"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// The records a Rollout reads, each decoded into a struct with only the
// fields it needs.

// ---- session_meta and turn_context ----

type sessionMetaPayload struct {
	ID             string         `json:"id"`
	Timestamp      string         `json:"timestamp"`
	Cwd            string         `json:"cwd"`
	CLIVersion     string         `json:"cli_version"`
	Source         jsontext.Value `json:"source"`
	ParentThreadID string         `json:"parent_thread_id"`
	AgentNickname  string         `json:"agent_nickname"`
	AgentRole      string         `json:"agent_role"`
}

type threadSpawn struct {
	ParentThreadID string `json:"parent_thread_id"`
	AgentNickname  string `json:"agent_nickname"`
	AgentRole      string `json:"agent_role"`
}

func (r *Rollout) sessionMeta(dst []agentbridge.Event, line, payload []byte) []agentbridge.Event {
	if r.metaSeen {
		// Later session_meta records are history replayed into a fork or a
		// resumed thread: the first one names this rollout's thread.
		return dst
	}
	var p sessionMetaPayload
	if !decode(line, payload, &p) {
		return dst
	}
	id := validate.SafeID(p.ID)
	if id == "" {
		return dst
	}
	r.metaSeen = true
	r.meta.ID = id
	r.meta.Cwd = validate.CleanCwd(p.Cwd)
	r.meta.CLIVersion = validate.Label(p.CLIVersion)
	r.meta.Nickname = validate.Label(p.AgentNickname)
	r.meta.Role = validate.Label(p.AgentRole)
	parent := p.ParentThreadID
	if len(p.Source) > 0 {
		switch p.Source[0] {
		case '"':
			var s string
			if json.Unmarshal(p.Source, &s) == nil {
				r.meta.Source = validate.Label(s)
			}
		case '{':
			var src struct {
				Subagent jsontext.Value `json:"subagent"`
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
						r.meta.Nickname = validate.Label(sa.ThreadSpawn.AgentNickname)
					}
					if r.meta.Role == "" {
						r.meta.Role = validate.Label(sa.ThreadSpawn.AgentRole)
					}
				} else if src.Subagent[0] == '"' {
					var kind string
					if json.Unmarshal(src.Subagent, &kind) == nil && r.meta.Role == "" {
						r.meta.Role = validate.Label(kind) // "review", "compact"
					}
				}
			}
		}
	}
	if r.meta.Subagent {
		r.meta.Parent = validate.SafeID(parent)
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
		r.meta.ApprovalPolicy = validate.Label(p.ApprovalPolicy)
	}
	if r.meta.Cwd == "" {
		if r.meta.Cwd = validate.CleanCwd(p.Cwd); r.meta.Cwd != "" && r.started {
			// session_meta named no cwd: a repeated session.started sets
			// it (the fold keeps the status of a known session)
			dst = append(dst, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: r.meta.Cwd})
		}
	}
	if m := validate.Label(p.Model); m != "" {
		dst = r.setModel(dst, m)
	}
	return dst
}

// ---- event_msg ----

// errorText is the message of a task_complete's error (an object with a
// "message", or a string) as display text; "" when there is none.
func errorText(v jsontext.Value) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return validate.ErrorText(s)
	}
	var o struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(v, &o) == nil {
		return validate.ErrorText(o.Message)
	}
	return ""
}

type turnPayload struct {
	TurnID string         `json:"turn_id"`
	Reason string         `json:"reason"` // turn_aborted
	Error  jsontext.Value `json:"error"`  // task_complete
}

type userMessagePayload struct {
	Message string `json:"message"`
}

// itemCompletedPayload is an item_completed event (Codex 0.16x and later)
// as far as a title needs it: a UserMessage item's text parts.
type itemCompletedPayload struct {
	Item struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"item"`
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
		Err jsontext.Value `json:"Err"`
	} `json:"result"` // mcp_tool_call_end
}

func (p *commandEndPayload) subject() string { return p.CallID }

type spawnEndPayload struct {
	SenderThreadID   string `json:"sender_thread_id"`
	NewThreadID      string `json:"new_thread_id"`
	NewAgentNickname string `json:"new_agent_nickname"`
	NewAgentRole     string `json:"new_agent_role"`
}

func (p *spawnEndPayload) subject() string { return p.NewThreadID }

type agentStatus struct {
	ThreadID string         `json:"thread_id"`
	Status   jsontext.Value `json:"status"`
}

type waitingEndPayload struct {
	AgentStatuses []agentStatus             `json:"agent_statuses"`
	Statuses      map[string]jsontext.Value `json:"statuses"`
}

type closeEndPayload struct {
	ReceiverThreadID string         `json:"receiver_thread_id"`
	Status           jsontext.Value `json:"status"`
}

func (p *closeEndPayload) subject() string { return p.ReceiverThreadID }

// decodeSubject decodes a record's payload (decode) and returns it with
// the id of the call or thread it is about (validate.SafeID), which is
// empty when the payload does not decode or names no usable id.
func decodeSubject[T any, P interface {
	*T
	subject() string
}](line, payload []byte) (T, string) {
	var p T
	if !decode(line, payload, P(&p)) {
		return p, ""
	}
	return p, validate.SafeID(P(&p).subject())
}

func (r *Rollout) eventMsg(dst []agentbridge.Event, ptype string, line, payload []byte, at int64) []agentbridge.Event {
	switch ptype {
	case "token_count":
		return r.tokenCount(dst, line, payload, at)
	case "task_started", "turn_started", "task_complete", "turn_complete", "turn_aborted":
		return r.turnRecord(dst, ptype, line, payload, at)
	case "error":
		r.turnErr = true
		var p userMessagePayload // {"message": …}
		if decode(line, payload, &p) {
			if t := validate.ErrorText(p.Message); t != "" {
				r.turnErrText = t
			}
		}
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
	case "item_completed":
		// Since 0.16x a prompt is persisted as an item_completed UserMessage
		// (no user_message record): it gives the title when the thread has
		// no name; turns come from the task events.
		if r.named || r.titleText != "" || !bytes.Contains(line, []byte(`"type":"UserMessage"`)) {
			return dst
		}
		var p itemCompletedPayload
		if !decode(line, payload, &p) || p.Item.Type != "UserMessage" {
			return dst
		}
		for _, c := range p.Item.Content {
			if c.Type != "text" {
				continue
			}
			if _, injected := environmentCwd(c.Text); injected {
				return dst
			}
			if t := validate.Title(c.Text); t != "" {
				return r.setTitle(dst, t)
			}
		}
		return dst
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
		p, id := decodeSubject[commandEndPayload](line, payload)
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
		p, child := decodeSubject[spawnEndPayload](line, payload)
		if child == "" {
			return dst
		}
		sender := validate.SafeID(p.SenderThreadID)
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
			Title: validate.Label(p.NewAgentNickname), Type: validate.Label(p.NewAgentRole),
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
		p, id := decodeSubject[closeEndPayload](line, payload)
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

// turnRecord handles the task events that start and end turns: a turn
// started (task_started, turn_started), completed (task_complete,
// turn_complete) or aborted (turn_aborted).
func (r *Rollout) turnRecord(dst []agentbridge.Event, ptype string, line, payload []byte, at int64) []agentbridge.Event {
	var p turnPayload
	if !decode(line, payload, &p) {
		return dst
	}
	r.taskEvents = true
	if r.replayed(p.TurnID) {
		return dst // history replayed into a subagent's rollout
	}
	if ptype == "task_started" || ptype == "turn_started" {
		id := validate.SafeID(p.TurnID)
		if id == "" {
			id = lineID("turn", r.line)
		}
		return r.startTurn(dst, id, at)
	}
	if !r.turnOpen {
		return dst // no turn to end (a repeated or stray record)
	}
	out := agentbridge.OutcomeSuccess
	switch {
	case ptype == "turn_aborted":
		out = agentbridge.OutcomeCancelled
		if p.Reason == "budget_limited" {
			out, r.turnErrText = agentbridge.OutcomeError, "budget limited"
		}
	case (len(p.Error) > 0 && string(p.Error) != "null") || r.turnErr:
		out = agentbridge.OutcomeError
		if t := errorText(p.Error); t != "" {
			r.turnErrText = t
		}
	}
	return r.endTurn(r.ensureStarted(dst), out, at)
}

// replayed reports whether turn, the id of a turn record of a subagent's
// rollout, is history replayed into it rather than one of its own turns. A
// subagent spawned with the parent's history (spawn_agent fork_context)
// gets the parent's session_meta and records copied into its rollout,
// among them the parent's finished turns: their task_complete must not end
// the subagent while it runs. Codex's thread and turn ids are UUIDv7,
// whose first 48 bits are their creation time in milliseconds: a turn
// created before the thread itself is not its own. False when either id is
// no UUIDv7 (older ids) or the rollout is a root's (a forked root session
// keeps showing the turns it was forked with).
func (r *Rollout) replayed(turn string) bool {
	if !r.meta.Subagent {
		return false
	}
	t, ok := uuid7Time(turn)
	if !ok {
		return false
	}
	th, ok := uuid7Time(r.meta.ID)
	return ok && t < th
}

// uuid7Time returns the 48-bit millisecond timestamp of a UUIDv7 in its
// canonical form (8-4-4-4-12 hex digits, version 7).
func uuid7Time(id string) (uint64, bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' || id[14] != '7' {
		return 0, false
	}
	var ms uint64
	for i := 0; i < 13; i++ {
		if i == 8 {
			continue
		}
		c := id[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		ms = ms<<4 | uint64(d)
	}
	return ms, true
}

// appendChildStatus appends subagent.done for a child whose status (Codex's
// AgentStatus) is final.
func appendChildStatus(dst []agentbridge.Event, thread string, status jsontext.Value, at int64) []agentbridge.Event {
	id := validate.SafeID(thread)
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
func agentOutcome(status jsontext.Value) (agentbridge.Outcome, bool) {
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
		var m map[string]jsontext.Value
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
	ID     string         `json:"id"`
	CallID string         `json:"call_id"`
	Name   string         `json:"name"`
	Status string         `json:"status"`
	Output jsontext.Value `json:"output"`
}

func (p *callPayload) subject() string { return p.CallID }

// toolID is the call's stable id: its call_id, else its item id, else one
// made from kind and the line number, so that a call without ids still
// opens and is closed at turn end.
func (p *callPayload) toolID(kind string, line int) string {
	if id := validate.SafeID(p.CallID); id != "" {
		return id
	}
	if id := validate.SafeID(p.ID); id != "" {
		return id
	}
	return lineID(kind, line)
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
		id := p.toolID("call", r.line)
		name := validate.Label(p.Name)
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
		id := p.toolID("search", r.line)
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
		p, id := decodeSubject[callPayload](line, payload)
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
func (r *Rollout) toolOutcome(id string, output jsontext.Value) agentbridge.Outcome {
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
func outputExitCode(output jsontext.Value) (int, bool) {
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
				return validate.CleanCwd(rest[:j]), true
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

// tokenCounts is a token_count event's info: the thread's totals so far
// (total_token_usage) and the last call's (last_token_usage). OpenAI's
// input_tokens include the cached ones, output_tokens the reasoning ones.
type tokenCounts struct {
	Info *struct {
		Total *struct {
			Input  int64 `json:"input_tokens"`
			Cached int64 `json:"cached_input_tokens"`
			Output int64 `json:"output_tokens"`
		} `json:"total_token_usage"`
	} `json:"info"`
}

// tokenCount reports the totals of a token_count event. They are
// cumulative, so they replace the session's sum (UsageReport.Total) rather
// than add to it; Codex repeats the same totals (one per rate-limit
// update), and a repeat is not published again.
func (r *Rollout) tokenCount(dst []agentbridge.Event, line, payload []byte, at int64) []agentbridge.Event {
	var p tokenCounts
	if !decode(line, payload, &p) || p.Info == nil || p.Info.Total == nil {
		return dst
	}
	t := p.Info.Total
	if t.Input < 0 || t.Cached < 0 || t.Output < 0 {
		return dst
	}
	u := agentbridge.Usage{InputTokens: max(0, t.Input-t.Cached), OutputTokens: t.Output, CacheReadTokens: min(t.Cached, t.Input)}
	if r.usage != nil && *r.usage == u {
		return dst
	}
	r.usage = &u
	dst = r.ensureStarted(dst)
	return append(dst, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at, Usage: &agentbridge.UsageReport{Usage: u, Total: true}})
}
