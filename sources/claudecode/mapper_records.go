package claudecode

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

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
