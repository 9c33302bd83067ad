package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// ErrMalformed is returned (wrapped) for a transcript line that is not a
// JSON object. The caller reports it as a diagnostic; the mapper's state is
// unchanged and the next line is read as usual.
var ErrMalformed = errors.New("claudecode: malformed transcript line")

// Tool names with a meaning beyond "a tool ran".
const (
	toolAgent       = "Agent" // 2.1.x subagent tool
	toolTask        = "Task"  // its older name
	toolAskQuestion = "AskUserQuestion"
	toolExitPlan    = "ExitPlanMode"
)

// Wait reasons the mapper infers from the journal alone.
const (
	reasonQuestion = "answer a question"
	reasonPlan     = "approve the plan"
)

// Mapper turns the transcript lines of one Claude Code session into
// lifecycle events, in order. It is pure: no I/O, no clock; every event's
// occurredAt comes from the record's own timestamp. Feed it complete lines
// with Line; tell it what the live registry says with Registry; end it with
// Exited. A Mapper is not safe for concurrent use.
type Mapper struct {
	id         string
	inferWaits bool
	sidechain  bool

	started bool
	pid     int
	startAt int64 // the process start (registry startedAt), for session.started
	lastAt  int64 // timestamp of the latest record
	cwd     string
	model   string

	customTitle, aiTitle, summaryTitle, promptTitle string
	title                                           string // as last published

	// command is the promptId of the slash command typed last, until the
	// prompt it sends the model (an isMeta record of that promptId) opens
	// its turn.
	command string

	turn string // open turn id; "" when none
	// endedBy is the API message id of the reply that ended the last turn:
	// Claude Code writes one assistant record per content block (thinking,
	// then text), each with the reply's stop_reason, so the blocks after
	// the first belong to the turn that already ended.
	endedBy string
	// turnAt is the timestamp of the record that opened the current (or
	// last) turn, unprompted when no prompt did (ensureTurn): a prompt
	// stamped before it is that turn's own, written late (see prompt).
	turnAt     int64
	unprompted bool
	turns      int
	used       map[string]struct{} // turn ids given out, so none repeats

	tools     map[string]*openTool // open tools by id
	toolOrder []string             // open tool ids in start order
	subs      map[string]*subagent // running subagents by id
	subOrder  []string
	agents    map[string]string   // Claude agentId → subagent id
	everSub   map[string]struct{} // every subagent id ever started

	reg     RegistryState // last registry state applied
	regWait string        // open registry wait id
	// regWaitTool is the tool the open registry wait names ("" when its
	// reason is the registry's own text, e.g. "permission prompt").
	regWaitTool string
	answered    bool // the open turn has a reply from the model
	busySeen    bool // the registry said busy during the open turn
	// goneAt is when the bound process was seen gone (epoch ms; 0: not
	// gone). Records stamped no later were written by that process and
	// read after its exit: they no longer start or end anything.
	goneAt    int64
	lateMoved bool   // a line of that tail moved the session out of exited
	late      bool   // the record being read is of that tail
	exitTurn  string // the turn open when the process was seen gone

	rawCwd, cleanCwd string // the last record's cwd, and it cleaned

	out []agentbridge.Event
	dec decoder
	rec record

	// jobWait: the open wait of a blocked background session (Job)
	jobWait string
}

type openTool struct {
	name     string
	detail   string // what it acts on (command, file, URL…), raw; "" if none
	subagent bool
	wait     bool // an inferred wait is open on it
}

type subagent struct {
	async  bool // launched in the background: outlives its tool and turn
	linked bool // its Claude agentId is known
}

// MapperOptions configure a Mapper.
type MapperOptions struct {
	// PID is the session's process when already known (from the registry).
	PID int
	// InferWaits opens a wait on a pending AskUserQuestion or ExitPlanMode
	// tool_use. Set it when no registry with status observes waits.
	InferWaits bool
	// Sidechain says the transcript is a subagent's own: its records, all
	// marked isSidechain, are read as the session's (in a root transcript
	// they belong to a subagent and are skipped).
	Sidechain bool
}

// NewMapper returns a mapper for the session with the given id (the
// transcript's file stem). An id that is not an identity value is replaced
// by a stable derived one (see SessionID).
func NewMapper(sessionID string, o MapperOptions) *Mapper {
	return &Mapper{
		id:         SessionID(sessionID),
		pid:        o.PID,
		inferWaits: o.InferWaits,
		sidechain:  o.Sidechain,
		tools:      map[string]*openTool{},
		subs:       map[string]*subagent{},
		agents:     map[string]string{},
		used:       map[string]struct{}{},
		everSub:    map[string]struct{}{},
	}
}

// SessionID returns the session id the bridge publishes for a Claude Code
// session id: itself when it is an identity value (a UUID always is), else
// a stable derived id.
func SessionID(claudeID string) string { return validate.SafeID(claudeID) }

// ID returns the published session id.
func (m *Mapper) ID() string { return m.id }

// Started reports whether session.started was emitted.
func (m *Mapper) Started() bool { return m.started }

// Cwd returns the working directory the records named last ("" if none).
func (m *Mapper) Cwd() string { return m.cwd }

// Title returns the current title ("" if none).
func (m *Mapper) Title() string { return m.title }

// Model returns the current model ("" if none).
func (m *Mapper) Model() string { return m.model }

// InTurn reports whether a turn is open.
func (m *Mapper) InTurn() bool { return m.turn != "" }

// Line maps one complete transcript line (without its newline). Unknown
// record types and records without meaning for the lifecycle give no
// events. A line that is not a JSON object gives an error wrapping
// ErrMalformed and no events. The returned slice is valid until the next
// call.
func (m *Mapper) Line(line []byte) ([]agentbridge.Event, error) {
	m.out = m.out[:0]
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if line[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	r := &m.rec
	if err := m.dec.decode(line, r); err != nil {
		*r = record{}
		return nil, fmt.Errorf("%w: %s", ErrMalformed, err)
	}
	m.record(r)
	return m.out, nil
}

// jsonProblem describes a decoding error without quoting the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "invalid JSON at byte " + strconv.FormatInt(se.Offset, 10)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "field " + strconv.Quote(te.Field) + " has the wrong type"
	}
	return "invalid JSON"
}

// Version returns the Claude Code version the last record given to Line
// names ("" when none).
func (m *Mapper) Version() string { return m.rec.Version }

// Start emits session.started when no record did yet, so that a session
// whose transcript holds only metadata (or nothing) still becomes known.
func (m *Mapper) Start() []agentbridge.Event {
	m.out = m.out[:0]
	m.ensureStarted()
	return m.out
}

func (m *Mapper) record(r *record) {
	if m.sidechain {
		r.IsSidechain = false
	}
	at := sources.Millis(r.Timestamp)
	if at > m.lastAt {
		m.lastAt = at
	}
	// The tail of a process that exited, read after its exit was seen, is
	// still what the process did (its prompt, its reply, how the turn
	// ended): it is read as usual; LateExit then ends the session again.
	m.late = m.goneAt != 0 && at != 0 && at <= m.goneAt
	if m.late {
		first := len(m.out)
		defer func() {
			for _, e := range m.out[first:] {
				if movesStatus(e.Kind) {
					m.lateMoved = true
				}
			}
		}()
	}
	if r.Cwd != m.rawCwd { // every record names it: clean it once
		m.rawCwd, m.cleanCwd = r.Cwd, validate.CleanCwd(r.Cwd)
	}
	if c := m.cleanCwd; c != "" && !r.IsSidechain {
		if m.cwd == "" || !m.started {
			m.cwd = c
		}
	}
	switch r.Type {
	case "user":
		if !r.IsSidechain {
			m.ensureStarted()
			m.user(r, at)
		}
	case "assistant":
		m.ensureStarted()
		if !r.IsSidechain {
			m.assistant(r, at)
		} else if !r.IsAPIError && r.msg.Model != "<synthetic>" {
			m.usage(&r.msg, at) // an inline subagent's tokens are the session's too
		}
	case "system":
		if !r.IsSidechain {
			m.ensureStarted()
			m.system(r, at)
		}
	case "custom-title":
		m.customTitle = r.CustomTitle
	case "ai-title":
		m.aiTitle = r.AITitle
	case "summary":
		m.summaryTitle = r.Summary
	case "attachment":
		if m.cwd != "" {
			m.ensureStarted()
		}
		if !r.IsSidechain && r.attQueued && bytes.Contains(r.Attachment, []byte("task-notification")) {
			var a attachment
			if json.Unmarshal(r.Attachment, &a) == nil && a.Type == "queued_command" {
				m.taskNotification(a.Prompt, at)
			}
		}
	default:
		// attachments, progress, queue operations, snapshots and record
		// types of newer versions carry nothing the lifecycle needs.
		if m.cwd != "" {
			m.ensureStarted()
		}
	}
	m.updateTitle(at)
}

func (m *Mapper) emit(e agentbridge.Event) { m.out = append(m.out, e) }

func (m *Mapper) ensureStarted() {
	if m.started {
		return
	}
	m.started = true
	m.title = m.effectiveTitle()
	m.emit(m.startEvent())
}

// startEvent is session.started with everything known now. Its occurredAt
// is the process start from the registry, never a record's time: the
// session's process may be younger than its transcript (a resumed
// session), and the pid-reuse guard compares the two.
func (m *Mapper) startEvent() agentbridge.Event {
	return agentbridge.Event{
		Kind: agentbridge.KindSessionStarted, OccurredAt: m.startAt,
		Title: m.title, Model: m.model, Cwd: m.cwd, PID: m.pid,
	}
}

// Restate returns session.started with the session's current title, model,
// cwd and pid: sent when the bridge forgot a session (it stopped after
// exiting) that its transcript brings back.
func (m *Mapper) Restate() agentbridge.Event {
	m.started = true
	return m.startEvent()
}

// LastAt returns the time of the latest record read (epoch ms; 0: none).
func (m *Mapper) LastAt() int64 { return m.lastAt }

// SetOrigin records what the registry says of the session's process before
// the session started: its pid, cwd (used until a record names one) and
// start time (epoch ms). After the start it only updates what a later
// Restate reports.
func (m *Mapper) SetOrigin(pid int, cwd string, startedAt int64) {
	m.pid, m.startAt = pid, startedAt
	m.goneAt, m.lateMoved, m.exitTurn = 0, false, ""
	if m.cwd == "" {
		m.cwd = validate.CleanCwd(cwd)
	}
}

func (m *Mapper) effectiveTitle() string {
	for _, t := range []string{m.customTitle, m.aiTitle, m.summaryTitle, m.promptTitle} {
		if d := text.Display(t, validate.MaxTitle); d != "" {
			return d
		}
	}
	return ""
}

func (m *Mapper) updateTitle(at int64) {
	if !m.started {
		return
	}
	if t := m.effectiveTitle(); t != m.title && t != "" {
		m.title = t
		m.emit(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at, Title: t})
	}
}

// ---- user records ----

func (m *Mapper) user(r *record, at int64) {
	if !r.hasMsg {
		return
	}
	msg := &r.msg
	var text strings.Builder
	hasImage := false
	for i, b := range msg.blocks() {
		switch b.Type {
		case "tool_result":
			m.toolResult(r, &b, at)
		case "text":
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(b.text())
		case "image", "document":
			hasImage = true
		}
		_ = i
	}
	t := text.String()
	if strings.HasPrefix(strings.TrimSpace(t), interruptMarker) {
		m.finishTurn(agentbridge.OutcomeCancelled, "", at)
		// The next prompt may follow the marker in the same record.
		rest := strings.TrimSpace(t)
		if i := strings.IndexByte(rest, ']'); i >= 0 {
			rest = strings.TrimSpace(rest[i+1:])
		} else {
			rest = ""
		}
		if rest == "" {
			return
		}
		t = rest
	}
	if r.Origin != nil && r.Origin.Kind == "task-notification" || strings.Contains(t, "<task-notification>") {
		m.taskNotification(t, at)
		return
	}
	if r.IsMeta && !r.IsCompact && !r.IsVisibleTO && m.command != "" && r.PromptID == m.command &&
		!injected(t) && strings.TrimSpace(t) != "" {
		// The prompt a slash command sends the model (a skill's body,
		// /goal's instruction): the model works from now, not from its
		// first reply.
		m.command = ""
		m.ensureTurn(r, at)
		return
	}
	if strings.HasPrefix(strings.TrimLeft(t, " \t\r\n"), "<command-") && !r.IsMeta {
		m.command = validate.SafeID(r.PromptID)
	}
	if r.IsMeta || r.IsCompact || r.IsVisibleTO || injected(t) {
		return
	}
	if strings.TrimSpace(t) == "" && !hasImage {
		return
	}
	m.prompt(r, t, at)
}

// prompt starts a turn for a prompt the user typed.
//
// Claude Code 2.1.242 writes its transcript from several threads, each
// appending a batch of records; on a busy machine the batch that holds a
// prompt can land after the batch of its reply (and turn_duration). A
// prompt stamped before the record that opened the current or last turn,
// when no prompt opened that turn, is that turn's prompt written late: it
// names the turn (the title) but starts nothing.
func (m *Mapper) prompt(r *record, prompt string, at int64) {
	if m.unprompted && at != 0 && at < m.turnAt {
		m.unprompted = false
		if m.promptTitle == "" {
			m.promptTitle = prompt
		}
		return
	}
	if m.turn != "" {
		// The previous turn's end was not written (or not recognised): close
		// what it left open without claiming how it ended.
		m.closeOpen(at)
		m.turn = ""
	}
	if m.promptTitle == "" {
		m.promptTitle = prompt
	}
	m.openTurn(r, text.Display(prompt, validate.MaxText), at)
	m.unprompted = false
}

// turnID picks a turn id no earlier turn of the session used: the
// record's promptId (2.1.x groups a turn by it), else its uuid, else
// "turn-<n>" counted from the start of the transcript.
func (m *Mapper) turnID(r *record) string {
	m.turns++
	id := ""
	for _, c := range []string{r.PromptID, r.UUID} {
		if c = validate.SafeID(c); c != "" {
			if _, dup := m.used[c]; !dup {
				id = c
				break
			}
		}
	}
	for n := m.turns; id == ""; n++ {
		c := "turn-" + strconv.Itoa(n)
		if _, dup := m.used[c]; !dup {
			id = c
		}
	}
	m.used[id] = struct{}{}
	return id
}

func (m *Mapper) openTurn(r *record, promptText string, at int64) {
	m.turn = m.turnID(r)
	m.turnAt, m.unprompted = at, true
	m.endedBy = ""
	m.answered = false
	m.busySeen = m.reg.Status == RegistryBusy
	m.emit(agentbridge.Event{Kind: agentbridge.KindTurnStarted, OccurredAt: at, TurnID: m.turn, PromptText: promptText})
	if m.reg.Status == RegistryWaiting {
		m.openRegistryWait(at, "")
	}
}

// ensureTurn opens a turn for agent activity that no prompt announced: a
// slash command or skill, a background agent's notification, a stop hook
// that made the agent go on, a transcript read from its middle.
func (m *Mapper) ensureTurn(r *record, at int64) {
	if m.turn != "" {
		return
	}
	if m.late && m.exitTurn != "" {
		// The rest of the turn the process had open when it died: it goes
		// on under its own id (no second turn.started).
		m.turn, m.exitTurn = m.exitTurn, ""
		return
	}
	m.openTurn(r, "", at)
}

func (m *Mapper) toolResult(r *record, b *block, at int64) {
	id := validate.SafeID(b.ToolUseID)
	t, ok := m.tools[id]
	if !ok {
		return // a result for a tool this transcript never started
	}
	outcome := agentbridge.OutcomeSuccess
	switch {
	case resultCancelled(b.Content):
		outcome = agentbridge.OutcomeCancelled
	case b.IsError:
		outcome = agentbridge.OutcomeError
	}
	if t.wait {
		m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: id})
	}
	m.emit(agentbridge.Event{Kind: agentbridge.KindToolFinished, OccurredAt: at, ToolID: id, Outcome: outcome})
	m.dropTool(id)
	if !t.subagent {
		return
	}
	res := agentResultOf(r.ToolUseResult) // best effort: status and agentId
	if a := validate.SafeID(res.AgentID); a != "" {
		m.agents[a] = id
		if s := m.subs[id]; s != nil {
			s.linked = true
		}
	}
	if res.Status == "async_launched" && outcome == agentbridge.OutcomeSuccess {
		if s := m.subs[id]; s != nil {
			s.async = true
		}
		return
	}
	m.subDone(id, subOutcome(res.Status, outcome), at)
}

// subOutcome maps an Agent tool's toolUseResult.status to an outcome; the
// tool_result's own outcome wins when it is not a success.
func subOutcome(status string, result agentbridge.Outcome) agentbridge.Outcome {
	if result != agentbridge.OutcomeSuccess {
		return result
	}
	switch status {
	case "failed", "error":
		return agentbridge.OutcomeError
	case "killed", "cancelled", "canceled", "interrupted", "stopped":
		return agentbridge.OutcomeCancelled
	}
	return agentbridge.OutcomeSuccess
}

// taskNotification ends a background subagent that reported through a
// <task-notification> message.
func (m *Mapper) taskNotification(text string, at int64) {
	toolID, status := taskNotification(text)
	id := validate.SafeID(toolID)
	if s := m.subs[id]; s == nil || !s.async {
		return
	}
	m.subDone(id, subOutcome(status, agentbridge.OutcomeSuccess), at)
}

// ---- assistant records ----

// usage reports a message's token counts. Claude Code writes one record per
// content block, each with the message's usage: the message id makes the
// fold count it once.
func (m *Mapper) usage(msg *message, at int64) {
	if u, ok := msg.tokens(); ok {
		m.emit(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at,
			Usage: &agentbridge.UsageReport{Usage: u, MessageID: text.Bound(msg.ID, 128)}})
	}
}

func (m *Mapper) assistant(r *record, at int64) {
	msg := &r.msg
	if r.IsAPIError {
		if m.turn != "" {
			m.finishTurn(agentbridge.OutcomeError, apiErrorSummary(r), at)
		}
		return
	}
	if msg.Model == "<synthetic>" {
		return // a partial reply cut off by an interrupt, or a local notice
	}
	if m.turn == "" && msg.ID != "" && msg.ID == m.endedBy {
		return // a later block of the reply that ended the last turn
	}
	if msg.Model != "" {
		if mod := validate.Model(msg.Model); mod != m.model {
			m.model = mod
			m.emit(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at, Model: mod})
		}
	}
	m.usage(msg, at)
	blocks := msg.blocks()
	if len(blocks) > 0 {
		m.ensureTurn(r, at)
		m.answered = true
	}
	for i := range blocks {
		if blocks[i].Type == "tool_use" {
			m.toolUse(r, &blocks[i], i, at)
		}
	}
	if (msg.StopReason == "end_turn" || msg.StopReason == "stop_sequence") && len(m.tools) == 0 && m.turn != "" {
		m.finishTurn(agentbridge.OutcomeSuccess, "", at)
		m.endedBy = msg.ID
	}
}

// apiErrorSummary is the error of a turn an API error ended: the text
// Claude Code showed the user ("API Error: 529 {…overloaded…}", "Please
// run /login"), else the error's kind and HTTP status; redacted and bounded
// to validate.MaxError.
func apiErrorSummary(r *record) string {
	for i := range r.msg.content {
		if b := &r.msg.content[i]; b.Type == "text" {
			if t := validate.ErrorText(b.text()); t != "" {
				return t
			}
		}
	}
	var kind string
	if len(r.Error) > 0 && r.Error[0] == '"' {
		_ = json.Unmarshal(r.Error, &kind)
	}
	s := "API error"
	if kind != "" && validate.ValidID(kind) {
		s += ": " + kind
	}
	if st := string(bytes.TrimSpace(r.APIStatus)); st != "" && st != "null" {
		if _, err := strconv.Atoi(st); err == nil {
			s += " (" + st + ")"
		}
	}
	return s
}

func (m *Mapper) toolUse(r *record, b *block, index int, at int64) {
	id := validate.SafeID(b.ID)
	if id == "" {
		id = validate.SafeID(r.UUID + "." + strconv.Itoa(index))
	}
	if id == "" {
		id = "tool-" + strconv.Itoa(len(m.toolOrder)+1) + "." + m.turn
		id = validate.SafeID(id)
	}
	if _, dup := m.tools[id]; dup {
		return
	}
	name := validate.Label(b.Name)
	if name == "" {
		name = "tool"
	}
	t := &openTool{name: name, detail: toolDetail(b.Input)}
	m.tools[id] = t
	m.toolOrder = append(m.toolOrder, id)
	m.emit(agentbridge.Event{Kind: agentbridge.KindToolStarted, OccurredAt: at, ToolID: id, Name: name})
	if m.regWait != "" && m.regWaitTool == "" && b.Name != toolAgent && b.Name != toolTask {
		// The registry said "waiting" before this tool_use was read: the
		// wait names it now. An open wait keeps its reason, so a new one
		// (another id) opens first and the old one ends after it: the
		// session stays waiting throughout (the newest wait is shown).
		old := m.regWait
		m.openRegistryWait(at, ".1")
		if m.regWait != old {
			m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: old})
		}
	}
	switch b.Name {
	case toolAgent, toolTask:
		var in agentInput
		if len(b.Input) > 0 && b.Input[0] == '{' {
			_ = json.Unmarshal(b.Input, &in)
		}
		t.subagent = true
		if len(m.subs) >= validate.MaxSubagents {
			return // the snapshot holds no more; the tool is still tracked
		}
		m.subs[id] = &subagent{}
		m.subOrder = append(m.subOrder, id)
		m.everSub[id] = struct{}{}
		m.emit(agentbridge.Event{
			Kind: agentbridge.KindSubagentStarted, OccurredAt: at,
			SubagentID: id, ParentAgentID: m.id,
			Title: text.Display(in.Description, validate.MaxTitle),
			Type:  text.Display(in.SubagentType, validate.MaxText),
		})
	case toolAskQuestion, toolExitPlan:
		if !m.inferWaits {
			return
		}
		reason := reasonQuestion
		if b.Name == toolExitPlan {
			reason = reasonPlan
		}
		t.wait = true
		m.emit(agentbridge.Event{Kind: agentbridge.KindWaitStarted, OccurredAt: at, WaitID: id, State: agentbridge.StatusWaiting, Reason: reason})
	}
}

// ---- system records ----

func (m *Mapper) system(r *record, at int64) {
	switch r.Subtype {
	case "turn_duration":
		m.finishTurn(agentbridge.OutcomeSuccess, "", at)
	case "error":
		m.finishTurn(agentbridge.OutcomeError, "API error", at)
	}
	// api_error is a retry notice, compact_boundary a compaction: neither
	// ends or starts a turn.
}

// ---- turn end, exit ----

// closeOpen finishes every open wait and tool and every running foreground
// subagent, as cancelled.
func (m *Mapper) closeOpen(at int64) {
	if m.regWait != "" {
		m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: m.regWait})
		m.regWait = ""
	}
	if m.jobWait != "" {
		m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: m.jobWait})
		m.jobWait = ""
	}
	m.regWaitTool = ""
	for _, id := range m.toolOrder {
		t := m.tools[id]
		if t.wait {
			m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: id})
		}
		m.emit(agentbridge.Event{Kind: agentbridge.KindToolFinished, OccurredAt: at, ToolID: id, Outcome: agentbridge.OutcomeCancelled})
	}
	clear(m.tools)
	m.toolOrder = m.toolOrder[:0]
	for _, id := range append([]string(nil), m.subOrder...) {
		if !m.subs[id].async {
			m.subDone(id, agentbridge.OutcomeCancelled, at)
		}
	}
}

func (m *Mapper) finishTurn(outcome agentbridge.Outcome, summary string, at int64) {
	if m.turn == "" {
		return
	}
	m.closeOpen(at)
	m.emit(agentbridge.Event{Kind: agentbridge.KindAgentDone, OccurredAt: at, Outcome: outcome, Summary: summary})
	m.turn = ""
}

func (m *Mapper) dropTool(id string) {
	delete(m.tools, id)
	for i, t := range m.toolOrder {
		if t == id {
			m.toolOrder = append(m.toolOrder[:i], m.toolOrder[i+1:]...)
			break
		}
	}
}

func (m *Mapper) subDone(id string, outcome agentbridge.Outcome, at int64) {
	if _, ok := m.subs[id]; !ok {
		return
	}
	delete(m.subs, id)
	for i, s := range m.subOrder {
		if s == id {
			m.subOrder = append(m.subOrder[:i], m.subOrder[i+1:]...)
			break
		}
	}
	m.emit(agentbridge.Event{Kind: agentbridge.KindSubagentDone, OccurredAt: at, SubagentID: id, Outcome: outcome})
}

// Gone records when the bound process was seen gone (epoch ms, the
// caller's clock): transcript lines read later but stamped no later were
// written by that process before it died (see LateExit). A new process
// (SetOrigin) clears it.
func (m *Mapper) Gone(at int64) { m.goneAt = at }

// Exited ends the session's process: every subagent still running is
// cancelled, then agent.exited (which closes open waits and tools). at is
// the time of exit in epoch ms, 0 when unknown; signal is e.g. "SIGKILL".
func (m *Mapper) Exited(at int64, exitCode *int, signal string) []agentbridge.Event {
	m.out = m.out[:0]
	m.exit(at, exitCode, signal)
	return m.out
}

// movesStatus reports whether an event kind can take a session out of
// exited.
func movesStatus(k agentbridge.EventKind) bool {
	switch k {
	case agentbridge.KindTurnStarted, agentbridge.KindToolStarted, agentbridge.KindWaitStarted,
		agentbridge.KindWaitFinished, agentbridge.KindAgentDone, agentbridge.KindSubagentStarted:
		return true
	}
	return false
}

// exit appends the events of Exited.
func (m *Mapper) exit(at int64, exitCode *int, signal string) {
	m.ensureStarted()
	for _, id := range append([]string(nil), m.subOrder...) {
		m.subDone(id, agentbridge.OutcomeCancelled, at)
	}
	clear(m.tools)
	m.toolOrder = m.toolOrder[:0]
	if m.turn != "" {
		m.exitTurn, m.turn = m.turn, ""
	}
	m.regWait, m.regWaitTool, m.jobWait = "", "", ""
	m.reg = RegistryState{}
	m.lateMoved = false
	m.emit(agentbridge.Event{Kind: agentbridge.KindAgentExited, OccurredAt: at, ExitCode: exitCode, Signal: signal})
}

// LateExit ends the session again when lines its exited process wrote,
// read after the exit was seen (Gone), moved it (a turn started or ended):
// call it once those lines are read (at the end of a batch), so that the
// session ends exited with its last turn known. It returns no events
// otherwise.
func (m *Mapper) LateExit() []agentbridge.Event {
	m.out = m.out[:0]
	if !m.lateMoved {
		return nil
	}
	m.exit(0, nil, "")
	return m.out
}

// ---- the live registry ----

// RegistryStatus is the status field of a sessions/<pid>.json file.
type RegistryStatus string

// Registry statuses (Claude Code 2.1.x; older builds write none).
const (
	RegistryNone    RegistryStatus = "" // no registry, or one without status
	RegistryBusy    RegistryStatus = "busy"
	RegistryIdle    RegistryStatus = "idle"
	RegistryWaiting RegistryStatus = "waiting"
)

// RegistryState is what the registry says of the session now.
type RegistryState struct {
	Status     RegistryStatus
	WaitingFor string // e.g. "approve Bash"; raw, bounded by the mapper
	// WaitID names the current wait; a new id for each new wait, the same
	// id while one wait lasts (see waitID in registry.go).
	WaitID string
}

// Registry applies what the live registry says. A registry with a status
// observes waits, so inferred waits are closed and no more are opened. A
// "waiting" status opens a wait (state waiting, reason waitingFor) while a
// turn is open (or as soon as one opens); any other status, or a new wait
// id, closes it. Registry never starts or ends a turn: turns come from the
// transcript.
func (m *Mapper) Registry(st RegistryState, at int64) []agentbridge.Event {
	m.out = m.out[:0]
	if st.Status != RegistryNone && m.inferWaits {
		m.inferWaits = false
		for _, id := range m.toolOrder {
			if t := m.tools[id]; t.wait {
				t.wait = false
				m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: id})
			}
		}
	}
	if m.regWait != "" && (st.Status != RegistryWaiting || st.WaitID != m.reg.WaitID) {
		m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: m.regWait})
		m.regWait = ""
	}
	m.reg = st
	if st.Status == RegistryBusy && m.turn != "" {
		m.busySeen = true
	}
	if st.Status == RegistryWaiting && m.regWait == "" && m.turn != "" {
		m.openRegistryWait(at, "")
	}
	return m.out
}

// openRegistryWait opens the wait the registry reports. Its reason names
// the pending tool of the transcript when there is one ("Approve Bash:
// touch …/marker"), else it is the registry's own text. suffix makes the
// wait id of a replacement wait differ from the one it replaces.
func (m *Mapper) openRegistryWait(at int64, suffix string) {
	id := m.reg.WaitID
	if id != "" {
		id = validate.SafeID(id + suffix)
	}
	if id == "" || !m.started {
		return
	}
	reason, tool := m.pendingReason()
	if reason == "" {
		reason = text.Display(m.reg.WaitingFor, validate.MaxWaitingFor)
	}
	if reason == "" {
		reason = "input needed"
	}
	m.regWait, m.regWaitTool = id, tool
	m.emit(agentbridge.Event{Kind: agentbridge.KindWaitStarted, OccurredAt: at, WaitID: id, State: agentbridge.StatusWaiting, Reason: reason})
}

// pendingReason describes the newest open tool that is not a subagent —
// the one a permission prompt asks about — and returns it with its id;
// "" when no such tool is open.
func (m *Mapper) pendingReason() (reason, toolID string) {
	for i := len(m.toolOrder) - 1; i >= 0; i-- {
		id := m.toolOrder[i]
		t := m.tools[id]
		if t.subagent {
			continue
		}
		switch t.name {
		case toolAskQuestion:
			return reasonQuestion, id
		case toolExitPlan:
			return reasonPlan, id
		}
		r := "Approve " + t.name
		if t.detail != "" {
			r += ": " + t.detail
		}
		return text.Display(r, validate.MaxWaitingFor), id
	}
	return "", ""
}

// EndIdle ends the turn turnID when it is still open: the registry showed
// the process idle for a while and the transcript wrote no end. That is
// what an Escape before the model's first output leaves (Claude Code
// writes no interrupt marker then and puts the prompt back): the turn is
// cancelled when no reply came, else it completed. at is the time the
// registry went idle (epoch ms).
func (m *Mapper) EndIdle(turnID string, at int64) []agentbridge.Event {
	m.out = m.out[:0]
	if m.turn == "" || m.turn != turnID {
		return nil
	}
	outcome := agentbridge.OutcomeCancelled
	if m.answered {
		outcome = agentbridge.OutcomeSuccess
	}
	m.finishTurn(outcome, "", at)
	return m.out
}

// Turn returns the id of the open turn ("" when none).
func (m *Mapper) Turn() string { return m.turn }

// IdleEnds reports whether an idle registry may end the open turn (see
// EndIdle): the registry said busy during it, so idle now means the turn
// is over. Before busy, an idle registry is only the state the process
// was in when the prompt was sent.
func (m *Mapper) IdleEnds() bool { return m.turn != "" && m.busySeen }

// ---- subagent transcripts ----

// Child joins a subagent transcript (agent-<agentID>.jsonl, 2.1.2+ layout)
// to this session. toolUseID, agentType and description come from its
// .meta.json sidecar when there is one. It returns the subagent id the
// child is shown as and whether the child's own transcript must tell when
// it ends (own); a child joined to the parent's Agent/Task tool_use ends
// with that tool's result instead and gives no events here.
//
// Join order: the sidecar's toolUseId (the parent's tool_use starts and
// ends the subagent under that id, whenever it is read); else an agentId the parent's tool results named; else, while one of the
// parent's Agent/Task tools is still open and unjoined, that one (no event:
// ambiguous but never a duplicate); else the child becomes a subagent of
// its own, "agent-<agentID>", kept across turns until its transcript ends.
func (m *Mapper) Child(agentID, toolUseID, agentType, description string, at int64) (evs []agentbridge.Event, subID string, own bool) {
	m.out = m.out[:0]
	aid := validate.SafeID(agentID)
	if id := validate.SafeID(toolUseID); id != "" {
		// The parent's tool_use starts (or started) this subagent under the
		// tool's id; its tool_result ends it.
		if aid != "" {
			m.agents[aid] = id
		}
		if s := m.subs[id]; s != nil {
			s.linked = true
		}
		return nil, id, false
	}
	if id, ok := m.agents[aid]; ok {
		return nil, id, false
	}
	for _, id := range m.subOrder {
		if s := m.subs[id]; !s.linked && !s.async {
			if _, open := m.tools[id]; open {
				return nil, "", false
			}
		}
	}
	subID = validate.SafeID("agent-" + agentID)
	if _, dup := m.everSub[subID]; dup || subID == "" || len(m.subs) >= validate.MaxSubagents {
		return nil, subID, false
	}
	m.ensureStarted()
	m.subs[subID] = &subagent{async: true, linked: true}
	m.subOrder = append(m.subOrder, subID)
	m.everSub[subID] = struct{}{}
	if aid != "" {
		m.agents[aid] = subID
	}
	m.emit(agentbridge.Event{
		Kind: agentbridge.KindSubagentStarted, OccurredAt: at,
		SubagentID: subID, ParentAgentID: m.id,
		Title: text.Display(description, validate.MaxTitle),
		Type:  text.Display(agentType, validate.MaxText),
	})
	return m.out, subID, true
}

// ChildDone ends a subagent that Child started from its own transcript.
func (m *Mapper) ChildDone(subID string, outcome agentbridge.Outcome, at int64) []agentbridge.Event {
	m.out = m.out[:0]
	m.subDone(subID, outcome, at)
	return m.out
}
