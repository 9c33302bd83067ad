package copilot

import (
	"slices"
	"strconv"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// Copilot CLI's journal is append-only JSON lines, one event per line, all
// in one envelope: {"id","parentId","timestamp","type","data",["agentId"]}.
// The record types the mapping reads (the rest are ignored, so that a newer
// CLI's types cost nothing):
const (
	typeSessionStart     = "session.start"
	typeSessionResume    = "session.resume"
	typeSessionShutdown  = "session.shutdown"
	typeSessionError     = "session.error"
	typeTitleChanged     = "session.title_changed"
	typeModelChange      = "session.model_change"
	typeAutoModeResolved = "session.auto_mode_resolved"
	typeContextChanged   = "session.context_changed"
	typeCompactionStart  = "session.compaction_start"
	typeCompactionDone   = "session.compaction_complete"
	typeUserMessage      = "user.message"
	typeTurnStart        = "assistant.turn_start"
	typeAssistantMessage = "assistant.message"
	typeUsageRecord      = "session.usage_record"
	typeTurnEnd          = "assistant.turn_end"
	typeAbort            = "abort"
	typeToolStart        = "tool.execution_start"
	typeToolComplete     = "tool.execution_complete"
	typeSubagentStarted  = "subagent.started"
	typeSubagentDone     = "subagent.completed"
	typeSubagentFailed   = "subagent.failed"
	typePermRequested    = "permission.requested"
	typePermCompleted    = "permission.completed"
	typeInputRequested   = "user_input.requested"
	typeInputCompleted   = "user_input.completed"
	typeElicitRequested  = "elicitation.requested"
	typeElicitCompleted  = "elicitation.completed"
	typePlanRequested    = "exit_plan_mode.requested"
	typePlanCompleted    = "exit_plan_mode.completed"
	typeOAuthRequired    = "mcp.oauth_required"
	typeOAuthCompleted   = "mcp.oauth_completed"
)

// The waiting reasons that carry no argument.
const (
	reasonQuestion = "answer a question"
	reasonPlan     = "approve the plan"
	reasonInput    = "provide input"
	reasonSignIn   = "sign in to an MCP server"
)

// maxArg bounds the argument shown in a waiting reason ("approve shell: …").
const maxArg = 120

// autoModel is what session.model_change reports before the router has
// chosen; the model arrives with session.auto_mode_resolved.
const autoModel = "auto"

// envelope is a journal line; data is decoded by type, later.
type envelope struct {
	ID        string         `json:"id"`
	Timestamp string         `json:"timestamp"`
	Type      string         `json:"type"`
	AgentID   string         `json:"agentId"`
	Data      jsontext.Value `json:"data"`
}

type sessionData struct {
	SessionID     string `json:"sessionId"`
	SelectedModel string `json:"selectedModel"`
	Context       struct {
		Cwd string `json:"cwd"`
	} `json:"context"`
}

type modelData struct {
	NewModel    string `json:"newModel"`
	ChosenModel string `json:"chosenModel"`
	Title       string `json:"title"`
	Cwd         string `json:"cwd"`
}

type userData struct {
	Content       string `json:"content"`
	InteractionID string `json:"interactionId"`
}

// usageData is session.usage_record's data: one model call's token
// counts (Copilot 1.0.102 writes one per call, before its
// assistant.message, which then carries none).
type usageData struct {
	Usage struct {
		InputTokens      *int64 `json:"inputTokens"`
		OutputTokens     *int64 `json:"outputTokens"`
		CacheReadTokens  *int64 `json:"cacheReadTokens"`
		CacheWriteTokens *int64 `json:"cacheWriteTokens"`
	} `json:"usage"`
}

type assistantData struct {
	Model        string `json:"model"`
	OutputTokens *int64 `json:"outputTokens"` // the journal records no input counts
	ToolRequests []struct {
		ToolCallID string `json:"toolCallId"`
	} `json:"toolRequests"`
}

type toolData struct {
	ToolCallID      string         `json:"toolCallId"`
	ToolName        string         `json:"toolName"`
	Arguments       jsontext.Value `json:"arguments"`
	Success         *bool          `json:"success"`
	IsUserRequested bool           `json:"isUserRequested"`
	// subagent.*
	AgentName        string `json:"agentName"`
	AgentDisplayName string `json:"agentDisplayName"`
}

// toolArgs are the arguments the mapping shows: a task's description, an
// ask_user question.
type toolArgs struct {
	Description string `json:"description"`
	Question    string `json:"question"`
}

type permissionData struct {
	RequestID         string `json:"requestId"`
	ResolvedByHook    bool   `json:"resolvedByHook"`
	PermissionRequest struct {
		Kind            string `json:"kind"`
		FullCommandText string `json:"fullCommandText"`
		Intention       string `json:"intention"`
		FileName        string `json:"fileName"`
		Path            string `json:"path"`
		ServerName      string `json:"serverName"`
		ToolName        string `json:"toolName"`
		ToolTitle       string `json:"toolTitle"`
		URL             string `json:"url"`
		Action          string `json:"action"`
		HookMessage     string `json:"hookMessage"`
	} `json:"permissionRequest"`
}

type requestData struct {
	RequestID string `json:"requestId"`
}

type endData struct {
	ShutdownType string `json:"shutdownType"`
	Success      *bool  `json:"success"`
}

var decodeOptions = []json.Options{
	jsontext.AllowDuplicateNames(true), // the last one wins, as with encoding/json
	jsontext.AllowInvalidUTF8(true),    // text is bounded and cleaned later
}

// mapper maps the records of one journal, in order, to lifecycle events.
// It is the pure part of the source: bytes, the view of the session's
// fold and this small state in, events out, no I/O. Whether a turn is
// open and which tools and subagents run come from the fold (fold.View);
// the mapper keeps what the journal's format needs. Its maps are bounded
// by the fold's own limits.
type mapper struct {
	session    string // the session id: the parent of its subagents
	shutdown   bool   // session.shutdown ended the process and its turn (the fold keeps a turn open across agent.exited), until a turn starts
	inCall     bool   // between assistant.turn_start and assistant.turn_end: a model call runs
	toolsAsked bool   // the model call asked for tools
	replied    bool   // the model call wrote an assistant.message
	usageRecs  bool   // the journal has session.usage_record: the counts are there, not in assistant.message
	compaction bool   // a compaction opened the turn
	turns      int
	model      string
	// waits are the open waits. They stay here: the fold's waits are
	// also the hooks', which a View does not show.
	waits  map[string]bool
	titles map[string]string // tool call id → its description, for the subagent it starts

	// scratch, loaded from the view at each line (load)
	inTurn    bool
	tools     []string // open tools of the root agent, oldest first
	subagents []string // running subagents, oldest first

	env envelope // decode scratch
}

// load loads what the fold knows into the scratch fields.
func (m *mapper) load(v fold.View) {
	m.inTurn = v.InTurn() && !m.shutdown
	m.tools = v.OpenTools(m.tools[:0])
	m.subagents = v.RunningSubagents(m.subagents[:0])
}

// maxArgsBytes bounds the tool arguments looked into for a description
// or a question (an edit's arguments may hold a whole file).
const maxArgsBytes = 64 << 10

// maxTitles bounds mapper.titles: descriptions of tool calls whose
// subagent has not started yet.
const maxTitles = 64

// Map maps one journal line to the events it means, appended to out; v is
// the view of the session's fold as the lines before left it. code
// is "" for a line that was used or deliberately ignored (a record type
// the mapping does not read), sources.CodeInvalidJSON for a line that is
// not a JSON object with a string type, and sources.CodeInvalidRecord for
// a known record whose data has the wrong shape.
func (m *mapper) Map(v fold.View, line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
	m.env = envelope{}
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &m.env, decodeOptions...) != nil || m.env.Type == "" {
		return out, sources.CodeInvalidJSON
	}
	m.load(v)
	r := &m.env
	at := sources.Millis(r.Timestamp)
	switch r.Type {
	case typeSessionStart, typeSessionResume:
		var d sessionData
		if !m.data(&d) {
			return out, sources.CodeInvalidRecord
		}
		out = m.endTurn(out, at, agentbridge.OutcomeCancelled) // a turn the last process left open
		m.model = ""
		e := agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: at, Cwd: validate.CleanCwd(d.Context.Cwd)}
		if d.SelectedModel != autoModel {
			e.Model = m.setModel(d.SelectedModel)
		}
		return append(out, e), ""
	case typeModelChange, typeAutoModeResolved, typeTitleChanged, typeContextChanged:
		var d modelData
		if !m.data(&d) {
			return out, sources.CodeInvalidRecord
		}
		switch r.Type {
		case typeModelChange:
			if d.NewModel != autoModel {
				return m.metadata(out, at, "", d.NewModel), ""
			}
		case typeAutoModeResolved:
			return m.metadata(out, at, "", d.ChosenModel), ""
		case typeTitleChanged:
			return m.metadata(out, at, validate.Title(d.Title), ""), ""
		case typeContextChanged:
			if cwd := validate.CleanCwd(d.Cwd); cwd != "" {
				return append(out, agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: at, Cwd: cwd}), ""
			}
		}
		return out, ""
	case typeUserMessage:
		if r.AgentID != "" {
			return out, "" // a subagent's prompt: part of its parent's turn
		}
		var d userData
		if !m.data(&d) {
			return out, sources.CodeInvalidRecord
		}
		if m.inTurn && (m.inCall || m.toolsAsked) {
			return out, "" // steering an open turn: the turn goes on
		}
		// The model has answered and waits for nothing it asked for: a
		// turn still open (a tool or background subagent still runs) has
		// ended, and this prompt starts the next. Its subagents run on.
		out = m.endTurnKeep(out, at, agentbridge.OutcomeSuccess)
		return m.startTurn(out, at, d.InteractionID, validate.Title(d.Content)), ""
	case typeTurnStart:
		if r.AgentID != "" {
			return out, ""
		}
		if m.inTurn {
			m.inCall, m.toolsAsked, m.replied = true, false, false // the next model call of the same turn
			return out, ""
		}
		out = m.startTurn(out, at, "", "") // a turn without a prompt (e.g. a background agent reported back)
		m.inCall = true
		return out, ""
	case typeAssistantMessage:
		var d assistantData
		if !m.data(&d) {
			return out, sources.CodeInvalidRecord
		}
		if n := d.OutputTokens; n != nil && *n >= 0 && !m.usageRecs {
			// One assistant.message per message (deltas are another type);
			// a subagent's tokens are the session's too.
			out = append(out, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at,
				Usage: &agentbridge.UsageReport{Usage: agentbridge.Usage{OutputTokens: *n}, MessageID: validate.SafeID(r.ID)}})
		}
		if r.AgentID != "" {
			return out, ""
		}
		m.toolsAsked = m.toolsAsked || len(d.ToolRequests) > 0 // a reply may come in chunks
		m.replied = true
		return m.metadata(out, at, "", d.Model), ""
	case typeUsageRecord:
		// One model call's counts, a subagent's included (its tokens are
		// the session's too), as the journal records them.
		var d usageData
		if !m.data(&d) {
			return out, sources.CodeInvalidRecord
		}
		m.usageRecs = true
		var u agentbridge.Usage
		for _, f := range []struct {
			n   *int64
			dst *int64
		}{{d.Usage.InputTokens, &u.InputTokens}, {d.Usage.OutputTokens, &u.OutputTokens},
			{d.Usage.CacheReadTokens, &u.CacheReadTokens}, {d.Usage.CacheWriteTokens, &u.CacheWriteTokens}} {
			if f.n != nil && *f.n > 0 {
				*f.dst = *f.n
			}
		}
		if u == (agentbridge.Usage{}) {
			return out, ""
		}
		return append(out, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at,
			Usage: &agentbridge.UsageReport{Usage: u, MessageID: validate.SafeID(r.ID)}}), ""
	case typeTurnEnd:
		// A model call ended. The agent goes on when it asked for tools
		// (their results go back to the model), while a tool or
		// subagent runs; otherwise it has answered: the turn is done.
		if r.AgentID != "" {
			return out, ""
		}
		m.inCall = false
		if !m.inTurn || m.toolsAsked || len(m.tools) > 0 || len(m.subagents) > 0 {
			return out, ""
		}
		if !m.replied {
			// The call ended before the model said anything: it was cut
			// off (Escape before any output writes turn_end, then abort),
			// not answered. The abort or session.error that follows ends
			// the turn; a next prompt would too.
			return out, ""
		}
		return m.endTurn(out, at, agentbridge.OutcomeSuccess), ""
	case typeAbort:
		return m.endTurn(out, at, agentbridge.OutcomeCancelled), ""
	case typeSessionError:
		// {"errorType":"rate_limit","message":"Rate limit exceeded","statusCode":429}
		var d struct {
			Message string `json:"message"`
		}
		_ = m.data(&d)
		out = m.endTurn(out, at, agentbridge.OutcomeError)
		if n := len(out); n > 0 && out[n-1].Kind == agentbridge.KindAgentDone {
			out[n-1].Summary = validate.ErrorText(d.Message)
		}
		return out, ""
	case typeCompactionStart:
		if m.inTurn {
			return out, "" // an automatic compaction inside a turn
		}
		out = m.startTurn(out, at, "", "")
		m.compaction = true
		return out, ""
	case typeCompactionDone:
		var d endData
		if !m.data(&d) {
			return out, sources.CodeInvalidRecord
		}
		if !m.compaction {
			return out, ""
		}
		outcome := agentbridge.OutcomeSuccess
		if d.Success != nil && !*d.Success {
			outcome = agentbridge.OutcomeError
		}
		return m.endTurn(out, at, outcome), ""
	case typeSessionShutdown:
		m.clear()
		m.shutdown = true
		return append(out, agentbridge.Event{Kind: agentbridge.KindAgentExited, OccurredAt: at}), ""
	case typeToolStart, typeToolComplete, typeSubagentStarted, typeSubagentDone, typeSubagentFailed:
		var d toolData
		if !m.data(&d) {
			return out, sources.CodeInvalidRecord
		}
		return m.tool(out, at, &d)
	case typePermRequested:
		var d permissionData
		if !m.data(&d) {
			return out, sources.CodeInvalidRecord
		}
		if d.ResolvedByHook {
			return out, "" // a hook answered it: nobody waits
		}
		return m.openWait(out, at, d.RequestID, permissionReason(&d))
	case typeInputRequested, typeElicitRequested, typePlanRequested, typeOAuthRequired:
		var d requestData
		if !m.data(&d) {
			return out, sources.CodeInvalidRecord
		}
		reason := map[string]string{
			typeInputRequested: reasonQuestion, typeElicitRequested: reasonInput,
			typePlanRequested: reasonPlan, typeOAuthRequired: reasonSignIn,
		}[r.Type]
		return m.openWait(out, at, d.RequestID, reason)
	case typePermCompleted, typeInputCompleted, typeElicitCompleted, typePlanCompleted, typeOAuthCompleted:
		var d requestData
		if !m.data(&d) {
			return out, sources.CodeInvalidRecord
		}
		return m.closeWait(out, at, waitID(r.Type, d.RequestID)), ""
	}
	return out, ""
}

// data decodes the record's data object into d; false when it is missing
// or has the wrong shape.
func (m *mapper) data(d any) bool {
	return len(m.env.Data) > 0 && m.env.Data[0] == '{' && json.Unmarshal(m.env.Data, d, decodeOptions...) == nil
}

// tool maps tool.execution_* and subagent.* records.
func (m *mapper) tool(out []agentbridge.Event, at int64, d *toolData) ([]agentbridge.Event, string) {
	r := &m.env
	id := validate.SafeID(d.ToolCallID)
	switch r.Type {
	case typeToolStart:
		if id == "" {
			return out, sources.CodeInvalidRecord
		}
		var args toolArgs
		if len(d.Arguments) > 0 && d.Arguments[0] == '{' && len(d.Arguments) <= maxArgsBytes {
			_ = json.Unmarshal(d.Arguments, &args, decodeOptions...) // shown only if readable
		}
		if args.Description != "" && len(m.titles) < maxTitles {
			if m.titles == nil {
				m.titles = map[string]string{}
			}
			m.titles[id] = validate.Title(args.Description)
		}
		if r.AgentID != "" {
			return out, "" // a subagent's own tool: shown as its subagent
		}
		if slices.Contains(m.tools, id) || len(m.tools) >= fold.MaxOpenTools {
			return out, ""
		}
		if !m.inTurn {
			out = m.startTurn(out, at, "", "")
		}
		name := validate.Label(d.ToolName)
		if name == "" {
			name = "tool" // the fold needs a name; Copilot always gives one
		}
		out = append(out, agentbridge.Event{Kind: agentbridge.KindToolStarted, OccurredAt: at, ToolID: id, Name: name})
		// Copilot's own blocking tools wait for the user while they run.
		reason := map[string]string{"ask_user": reasonQuestion, "exit_plan_mode": reasonPlan}[d.ToolName]
		if reason == reasonQuestion && args.Question != "" {
			reason = "answer: " + short(args.Question)
		}
		if reason != "" && len(m.waits) < fold.MaxOpenWaits {
			out, _ = m.openWait(out, at, toolWait(id), reason)
		}
		return out, ""
	case typeToolComplete:
		delete(m.titles, id)
		if r.AgentID != "" || d.IsUserRequested || !slices.Contains(m.tools, id) {
			return out, "" // a subagent's tool, a `!` shell escape, or a tool never seen open
		}
		out = m.closeWait(out, at, toolWait(id)) // the wait a blocking tool opened
		outcome := agentbridge.OutcomeSuccess
		if d.Success != nil && !*d.Success {
			outcome = agentbridge.OutcomeError
		}
		return append(out, agentbridge.Event{Kind: agentbridge.KindToolFinished, OccurredAt: at, ToolID: id, Outcome: outcome}), ""
	case typeSubagentStarted:
		if id == "" {
			id = validate.SafeID(r.AgentID)
		}
		out, code, ok := m.open(out, at, id, slices.Contains(m.subagents, id), len(m.subagents), validate.MaxSubagents)
		if !ok {
			return out, code
		}
		title := m.titles[id]
		if title == "" {
			title = validate.Title(d.AgentDisplayName)
		}
		delete(m.titles, id)
		return append(out, agentbridge.Event{
			Kind: agentbridge.KindSubagentStarted, OccurredAt: at, SubagentID: id, ParentAgentID: m.session,
			Type: text.Display(d.AgentName, validate.MaxSubagentType), Title: title,
		}), ""
	default: // subagent.completed, subagent.failed
		if id == "" {
			id = validate.SafeID(r.AgentID)
		}
		if !slices.Contains(m.subagents, id) {
			return out, ""
		}
		outcome := agentbridge.OutcomeSuccess
		if r.Type == typeSubagentFailed {
			outcome = agentbridge.OutcomeError
		}
		return append(out, agentbridge.Event{Kind: agentbridge.KindSubagentDone, OccurredAt: at, SubagentID: id, Outcome: outcome}), ""
	}
}

// startTurn opens a turn (turn.started): the id is the interaction's when
// it has a usable one, else the record's, else turn-<n>.
func (m *mapper) startTurn(out []agentbridge.Event, at int64, interaction, prompt string) []agentbridge.Event {
	m.turns++
	id := interaction
	if !validate.ValidID(id) {
		id = m.env.ID
	}
	if !validate.ValidID(id) {
		id = "turn-" + strconv.Itoa(m.turns)
	}
	m.inTurn, m.inCall, m.toolsAsked, m.replied, m.compaction = true, false, false, false, false
	m.shutdown = false
	return append(out, agentbridge.Event{Kind: agentbridge.KindTurnStarted, OccurredAt: at, TurnID: id, PromptText: prompt})
}

// endTurn ends an open turn with outcome: running subagents are cancelled
// (or failed, for an error), then agent.done. Nothing when no turn is open.
func (m *mapper) endTurn(out []agentbridge.Event, at int64, outcome agentbridge.Outcome) []agentbridge.Event {
	if !m.inTurn {
		return out
	}
	slices.Sort(m.subagents)
	for _, id := range m.subagents {
		out = append(out, agentbridge.Event{Kind: agentbridge.KindSubagentDone, OccurredAt: at, SubagentID: id, Outcome: outcome})
	}
	m.clear()
	return append(out, agentbridge.Event{Kind: agentbridge.KindAgentDone, OccurredAt: at, Outcome: outcome})
}

// endTurnKeep ends an open turn with outcome but keeps its subagents
// running (background agents outlive the turn that started them).
func (m *mapper) endTurnKeep(out []agentbridge.Event, at int64, outcome agentbridge.Outcome) []agentbridge.Event {
	if !m.inTurn {
		return out
	}
	subs := m.subagents
	m.clear()
	m.subagents = subs
	return append(out, agentbridge.Event{Kind: agentbridge.KindAgentDone, OccurredAt: at, Outcome: outcome})
}

// clear forgets the open turn, its tools, waits and subagents for the
// rest of the line (the fold closes them with agent.done and
// agent.exited).
func (m *mapper) clear() {
	m.inTurn, m.inCall, m.toolsAsked, m.replied, m.compaction = false, false, false, false, false
	m.tools, m.subagents = m.tools[:0], m.subagents[:0]
	clear(m.waits)
	clear(m.titles)
}

// metadata reports a title, or a model that differs from the last one.
func (m *mapper) metadata(out []agentbridge.Event, at int64, title, model string) []agentbridge.Event {
	if model == autoModel {
		model = ""
	}
	if model = validate.Model(model); model == m.model {
		model = ""
	} else if model != "" {
		m.model = model
	}
	if title == "" && model == "" {
		return out
	}
	return append(out, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at, Title: title, Model: model})
}

// setModel records model as the last reported one and returns it cleaned.
func (m *mapper) setModel(model string) string {
	m.model = validate.Model(model)
	return m.model
}

// openWait opens a wait on the user. A request without an id, or one
// already open, is counted as an unusable record / ignored.
func (m *mapper) openWait(out []agentbridge.Event, at int64, id, reason string) ([]agentbridge.Event, string) {
	if m.env.Type != typeToolStart {
		id = waitID(m.env.Type, id)
	}
	out, code, ok := m.open(out, at, id, m.waits[id], len(m.waits), fold.MaxOpenWaits)
	if !ok {
		return out, code
	}
	if m.waits == nil {
		m.waits = map[string]bool{}
	}
	m.waits[id] = true
	return append(out, agentbridge.Event{Kind: agentbridge.KindWaitStarted, OccurredAt: at, WaitID: id, State: agentbridge.StatusWaiting, Reason: reason}), ""
}

// open decides whether id (a wait's or a subagent's) opens, given whether
// it is open already and how many of its kind are (n), opening a turn
// first when none is: an empty id is an unusable record (code), one
// already open or one more than limit open ones is ignored.
func (m *mapper) open(out []agentbridge.Event, at int64, id string, isOpen bool, n, limit int) (_ []agentbridge.Event, code string, ok bool) {
	if id == "" {
		return out, sources.CodeInvalidRecord, false
	}
	if isOpen || n >= limit {
		return out, "", false
	}
	if !m.inTurn {
		out = m.startTurn(out, at, "", "")
	}
	return out, "", true
}

// closeWait finishes an open wait; nothing for one that is not open.
func (m *mapper) closeWait(out []agentbridge.Event, at int64, id string) []agentbridge.Event {
	if id == "" || !m.waits[id] {
		return out
	}
	delete(m.waits, id)
	return append(out, agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: id})
}

// waitID is the wait id of a request: its requestId, prefixed by what it
// asks for so that the request kinds cannot collide ("" for none).
func waitID(typ, requestID string) string {
	id := validate.SafeID(requestID)
	if id == "" {
		return ""
	}
	kind, _, _ := strings.Cut(typ, ".")
	if kind == "permission" {
		return id // as the CLI names it
	}
	return validate.SafeID(kind + ":" + id)
}

// permissionReason says what a permission request asks the user to allow:
// the kind and its short argument ("approve shell: git push"), shortened
// and redacted; a URL shows only its host.
func permissionReason(d *permissionData) string {
	p := &d.PermissionRequest
	arg := ""
	switch p.Kind {
	case "shell":
		arg = p.FullCommandText
		if arg == "" {
			arg = p.Intention
		}
	case "write":
		arg = p.FileName
	case "read":
		arg = p.Path
	case "mcp":
		arg = p.ServerName
		if t := firstOf(p.ToolTitle, p.ToolName); t != "" {
			arg = strings.TrimPrefix(arg+"/"+t, "/")
		}
	case "url":
		arg = host(p.URL)
	case "memory":
		arg = p.Action
	case "custom-tool":
		arg = p.ToolName
	case "hook":
		arg = firstOf(p.HookMessage, p.ToolName)
	}
	kind := text.Display(p.Kind, 40)
	if kind == "" {
		kind = "a tool"
	}
	if arg = short(arg); arg == "" {
		return "approve " + kind
	}
	return "approve " + kind + ": " + arg
}

// short makes the argument of a waiting reason: redacted, paths cut to
// their last element, at most maxArg characters.
func short(s string) string { return text.Display(s, maxArg) }

// toolWait is the id of the wait a blocking tool opens.
func toolWait(toolID string) string { return validate.SafeID("tool:" + toolID) }

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
