package gemini

import (
	"hash/fnv"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kit"
	"github.com/agentbridge/agentbridge/validate"
)

// Chat is one Gemini CLI chat file as its records build it. Gemini CLI
// (0.40 and later) writes an upsert log, not plain appends: a metadata
// line, then message records (the same message id again whenever its
// tool calls or tokens change), {"$set": {…}} patches (a "messages"
// array sets the history sent to the model: its new messages are taken,
// nothing is undone — see adopt — except in a legacy whole file, Whole)
// and {"$rewindTo": id} (the message with that id and every later one
// are gone). Chat keeps the conversation those records leave and derives
// the lifecycle events from it, so that a rewind undoes what it rewinds.
//
// Events are a pure function of the metadata and the message list
// (events); Line reports only what changed: the new events when the
// ones reported before are still a prefix of the new ones, else a
// rebuild (the caller drops the session's state and replays Events).
type Chat struct {
	meta  chatMeta
	known bool // the metadata line was seen
	msgs  []chatEntry
	pos   map[string]int // message id → its index in msgs
	cwd   string
	// Whole: the chat is a legacy whole file, given as one replaced
	// history each time (its $set.messages undoes what it drops).
	Whole  bool
	orphan chatMeta      // Continue: the metadata of the chat deleted at this path
	ended  []subagentEnd // found since the last TakeEnds
}

// Continue makes the chat take up meta (the metadata of a chat deleted at
// the same path) when its first record is not a metadata line: Gemini CLI
// recreates a chat deleted under it (by another TUI's start-up cleanup)
// by appending its next record, without the metadata.
func (c *Chat) Continue(meta chatMeta) { c.orphan = meta }

// chatMeta is the first line of a chat file.
type chatMeta struct {
	SessionID   string `json:"sessionId"`
	ProjectHash string `json:"projectHash"`
	StartTime   string `json:"startTime"`
	Kind        string `json:"kind"` // "main" or "subagent"
}

// chatEntry is one message of the conversation with the events it
// yields and the turn state after it.
type chatEntry struct {
	id     string
	sum    uint64 // fingerprint of the record, to notice a re-append that changed nothing
	events []agentbridge.Event
	ends   []subagentEnd // the subagents its finished invoke_agent calls report over
	after  turnState
}

// subagentEnd is a subagent's end as its parent's chat reports it: the
// invoke_agent call that ran it finished (Gemini CLI 0.61 runs a subagent
// synchronously and records its chat's session id as the call's agentId).
// It ends a subagent that never called complete_task (a time or turn limit,
// an error) and is not an event of the parent's own: the source sends it
// as subagent.done when that subagent is listed running (see subagentChat).
type subagentEnd struct {
	ID      string
	Outcome agentbridge.Outcome
}

// Bounds of what one message's tool calls make (a hostile chat can list
// hundreds of thousands in one line; Gemini CLI lists a handful): the
// calls after maxToolCalls in one message are not read, and at most
// maxOpenTools calls of a turn are followed as running (the ids are kept
// with every message's state, so a turn of many messages that each left
// a call open held more ids at every message, and looking one up went
// through them all). A call past that bound that is not finished in the
// same message is not shown.
const (
	maxToolCalls = 256
	maxOpenTools = 64
)

// turnState is what the mapping carries from one message to the next.
type turnState struct {
	open  bool     // a turn is running
	meta  kit.Meta // the title from the first prompt, the model last reported
	tools string   // ids of tools started and not finished, "\x00"-separated
}

// chatRecord is the union of the record shapes of a chat file; only the
// fields the mapping reads.
type chatRecord struct {
	// metadata line
	SessionID   string `json:"sessionId"`
	ProjectHash string `json:"projectHash"`
	StartTime   string `json:"startTime"`
	Kind        string `json:"kind"`
	// message
	ID        string         `json:"id"`
	Timestamp string         `json:"timestamp"`
	Type      string         `json:"type"`
	Content   jsontext.Value `json:"content"`
	Display   jsontext.Value `json:"displayContent"` // what the user typed, when the CLI added to it
	Model     string         `json:"model"`
	ToolCalls []chatToolCall `json:"toolCalls"`
	Tokens    *chatTokens    `json:"tokens"`
	// patches
	Set      *chatSet `json:"$set"`
	RewindTo *string  `json:"$rewindTo"`
}

// chatTokens is a reply's token counts. Gemini's input includes the cached
// tokens; thoughts and tool-use prompt tokens are counted apart.
type chatTokens struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Cached   int64 `json:"cached"`
	Thoughts int64 `json:"thoughts"`
	Tool     int64 `json:"tool"`
}

// usage maps the counts onto the bridge's: input not from the cache (with
// the tool-use prompt), output with the thoughts.
func (t *chatTokens) usage() (agentbridge.Usage, bool) {
	if t == nil || t.Input < 0 || t.Output < 0 || t.Cached < 0 || t.Thoughts < 0 || t.Tool < 0 {
		return agentbridge.Usage{}, false
	}
	cached := min(t.Cached, t.Input)
	return agentbridge.Usage{InputTokens: t.Input - cached + t.Tool, OutputTokens: t.Output + t.Thoughts, CacheReadTokens: cached}, true
}

type chatSet struct {
	Messages []jsontext.Value `json:"messages"`
}

type chatToolCall struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	DisplayName string         `json:"displayName"`
	Status      string         `json:"status"`
	AgentID     string         `json:"agentId"`       // invoke_agent: the subagent's chat session id
	Display     jsontext.Value `json:"resultDisplay"` // invoke_agent: an object with terminateReason; a string for most tools
}

// part is one element of a message's content list.
type part struct {
	Text             *string   `json:"text"`
	FunctionResponse *struct{} `json:"functionResponse"`
}

// Change is what one line did to a chat.
type Change int

// The changes Line reports.
const (
	// Unchanged: nothing to report (a patch of metadata, a re-append that
	// changed no event).
	Unchanged Change = iota
	// Appended: the events returned follow the ones reported before.
	Appended
	// Rebuilt: the events reported before no longer hold (a rewind, a
	// replaced history, a message that changed its meaning): drop the
	// session's state and replay Events.
	Rebuilt
)

// SessionID is the chat's session id, from its metadata line; empty until
// that line was read.
func (c *Chat) SessionID() string { return c.meta.SessionID }

// ProjectHash is the chat's projectHash (the SHA-256 of the working
// directory the CLI ran in), from its metadata line.
func (c *Chat) ProjectHash() string { return c.meta.ProjectHash }

// Subagent reports whether the chat is a subagent's (kind "subagent").
func (c *Chat) Subagent() bool { return c.meta.Kind == "subagent" }

// SetCwd sets the working directory session.started reports (from the
// project directory's .project_root).
func (c *Chat) SetCwd(cwd string) { c.cwd = cwd }

// Line applies one record. It returns the change and, for Appended, the
// new events; code is a sources.Code* for a line that was skipped.
func (c *Chat) Line(line []byte) (ch Change, events []agentbridge.Event, code string) {
	if len(line) == 0 || line[0] != '{' {
		return Unchanged, nil, sources.CodeInvalidJSON
	}
	var r chatRecord
	if err := json.Unmarshal(line, &r, json.RejectUnknownMembers(false)); err != nil {
		return Unchanged, nil, sources.CodeInvalidJSON
	}
	switch {
	case !c.known:
		if (r.SessionID == "" || r.ID != "") && c.orphan.SessionID != "" {
			c.meta, c.known = c.orphan, true
			events := []agentbridge.Event{c.started()}
			if ch, more, _ := c.Line(line); ch == Appended {
				events = append(events, more...)
			}
			return Appended, events, ""
		}
		if r.SessionID == "" || r.ID != "" {
			return Unchanged, nil, sources.CodeInvalidRecord
		}
		if !validate.ValidID(r.SessionID) {
			return Unchanged, nil, sources.CodeInvalidRecord
		}
		c.meta = chatMeta{SessionID: r.SessionID, ProjectHash: r.ProjectHash, StartTime: r.StartTime, Kind: r.Kind}
		c.known = true
		return Appended, []agentbridge.Event{c.started()}, ""
	case r.RewindTo != nil:
		i := c.index(*r.RewindTo)
		if i < 0 {
			i = 0 // Gemini CLI clears everything when the id is unknown
		}
		return c.replace(i, nil)
	case r.Set != nil:
		if r.Set.Messages == nil {
			return Unchanged, nil, "" // lastUpdated, summary, directories…
		}
		recs := make([]chatRecord, 0, len(r.Set.Messages))
		raws := make([][]byte, 0, len(r.Set.Messages))
		for _, m := range r.Set.Messages {
			var mr chatRecord
			if json.Unmarshal(m, &mr) != nil || mr.ID == "" {
				continue
			}
			recs = append(recs, mr)
			raws = append(raws, m)
		}
		if !c.Whole {
			return c.adopt(recs, raws)
		}
		return c.replaceWith(recs, raws)
	case r.ID != "":
		if i := c.index(r.ID); i >= 0 {
			if c.msgs[i].sum == fingerprint(line) {
				return Unchanged, nil, ""
			}
			return c.update(i, r, line) // re-appended: its tool calls or tokens changed
		}
		return c.update(len(c.msgs), r, line)
	}
	return Unchanged, nil, ""
}

// TakeEnds returns the subagent ends the lines applied since the last call
// reported (a message re-appended may report one again).
func (c *Chat) TakeEnds() []subagentEnd {
	ends := c.ended
	c.ended = nil
	return ends
}

// End returns how the chat's invoke_agent calls say subagent id ended,
// if one of them does.
func (c *Chat) End(id string) (agentbridge.Outcome, bool) {
	for i := len(c.msgs) - 1; i >= 0; i-- {
		for _, end := range c.msgs[i].ends {
			if end.ID == id {
				return end.Outcome, true
			}
		}
	}
	return "", false
}

// Events returns every event of the chat as it stands: what a rebuild
// replays.
func (c *Chat) Events() []agentbridge.Event {
	if !c.known {
		return nil
	}
	out := []agentbridge.Event{c.started()}
	for _, m := range c.msgs {
		out = append(out, m.events...)
	}
	return out
}

func (c *Chat) started() agentbridge.Event {
	return agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: sources.Millis(c.meta.StartTime), Cwd: c.cwd}
}

// index returns the index of message id in msgs, or -1: a map lookup, so
// that a chat of many messages is read in time linear in its length.
func (c *Chat) index(id string) int {
	if i, ok := c.pos[id]; ok {
		return i
	}
	return -1
}

// push appends e to msgs, indexing it.
func (c *Chat) push(e chatEntry) {
	if c.pos == nil {
		c.pos = map[string]int{}
	}
	c.pos[e.id] = len(c.msgs)
	c.msgs = append(c.msgs, e)
}

// cut drops msgs[i:] and their index entries: time proportional to what
// it removes.
func (c *Chat) cut(i int) {
	for _, m := range c.msgs[i:] {
		delete(c.pos, m.id)
	}
	clear(c.msgs[i:])
	c.msgs = c.msgs[:i]
}

// update sets message i (len(msgs) appends) to r; a later message that
// exists already keeps its place but is derived again.
func (c *Chat) update(i int, r chatRecord, raw []byte) (Change, []agentbridge.Event, string) {
	if !validate.ValidID(r.ID) {
		return Unchanged, nil, sources.CodeInvalidRecord
	}
	old := append([]chatEntry(nil), c.msgs[i:]...)
	prev := c.stateBefore(i)
	e := derive(r, prev)
	e.sum = fingerprint(raw)
	if i == len(c.msgs) {
		c.push(e)
	} else {
		c.msgs[i] = e
	}
	c.ended = append(c.ended, e.ends...)
	// Messages after i are not re-derived from their records (not kept);
	// an update of a message that is not the last one is rare (Gemini CLI
	// re-appends only the last): their events stay, after the new ones.
	return c.report(old, c.msgs[i:])
}

// replace cuts the conversation at i and appends nothing (a rewind).
func (c *Chat) replace(i int, _ []chatEntry) (Change, []agentbridge.Event, string) {
	old := append([]chatEntry(nil), c.msgs[i:]...)
	c.cut(i)
	return c.report(old, nil)
}

// replaceWith sets the whole conversation ($set.messages).
func (c *Chat) replaceWith(recs []chatRecord, raws [][]byte) (Change, []agentbridge.Event, string) {
	old := c.msgs
	c.msgs, c.pos = nil, nil
	for k, r := range recs {
		if !validate.ValidID(r.ID) {
			continue
		}
		e := derive(r, c.stateBefore(len(c.msgs)))
		e.sum = fingerprint(raws[k])
		c.push(e)
		c.ended = append(c.ended, e.ends...)
	}
	return c.report(old, c.msgs)
}

// adopt takes the history a .jsonl chat's $set.messages gives: Gemini CLI
// sets the history it sends the model (the session context alone after
// a cancelled request, a compressed summary, the prefix a $rewindTo
// already cut), which undoes nothing the user saw happen — only
// $rewindTo does. Messages it does not hold stay as they were; the ones
// it brings that are not known yet follow, derived after the last turn
// state, and are reported as appended.
func (c *Chat) adopt(recs []chatRecord, raws [][]byte) (Change, []agentbridge.Event, string) {
	var events []agentbridge.Event
	for k, r := range recs {
		if !validate.ValidID(r.ID) || c.index(r.ID) >= 0 {
			continue
		}
		e := derive(r, c.stateBefore(len(c.msgs)))
		e.sum = fingerprint(raws[k])
		c.push(e)
		c.ended = append(c.ended, e.ends...)
		events = append(events, e.events...)
	}
	if len(events) == 0 {
		return Unchanged, nil, ""
	}
	return Appended, events, ""
}

// report compares the events of the replaced tail with the new tail.
func (c *Chat) report(old, cur []chatEntry) (Change, []agentbridge.Event, string) {
	var was, now []agentbridge.Event
	for _, m := range old {
		was = append(was, m.events...)
	}
	for _, m := range cur {
		now = append(now, m.events...)
	}
	if len(now) >= len(was) && equalEvents(now[:len(was)], was) {
		if len(now) == len(was) {
			return Unchanged, nil, ""
		}
		return Appended, now[len(was):], ""
	}
	return Rebuilt, nil, ""
}

func (c *Chat) stateBefore(i int) turnState {
	if i == 0 {
		return turnState{}
	}
	return c.msgs[i-1].after
}

// derive maps one message, given the state before it.
func derive(r chatRecord, st turnState) chatEntry {
	e := chatEntry{id: r.ID}
	at := sources.Millis(r.Timestamp)
	add := func(ev agentbridge.Event) { e.events = append(e.events, ev) }
	switch r.Type {
	case "user":
		text, prompt := userText(r.Content)
		if !prompt {
			break // a tool's response, or context the CLI sends
		}
		if shown, ok := userText(r.Display); ok {
			text = shown
		}
		st.open, st.tools = true, ""
		st.meta.StartTurn(add, r.ID, at, text)
	case "gemini":
		if e, ok := st.meta.Model(r.Model); ok {
			add(e)
		}
		if u, ok := r.Tokens.usage(); ok {
			// The message id: a reply re-appended with new counts replaces its own.
			add(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at, Usage: &agentbridge.UsageReport{Usage: u, MessageID: r.ID}})
		}
		calls := r.ToolCalls[:min(len(r.ToolCalls), maxToolCalls)]
		for _, tc := range calls {
			if end, ok := invokeEnd(tc); ok {
				e.ends = append(e.ends, end)
			}
		}
		if !st.open {
			break
		}
		var finished agentbridge.Outcome // a subagent's complete_task ended its task
		for _, tc := range calls {
			id := validate.SafeID(tc.ID) // a subagent's calls are "<agent id>#<turn>-<n>"
			if id == "" {
				continue
			}
			out, done := toolOutcome(tc.Status)
			if !hasTool(st.tools, id) {
				if !done && strings.Count(st.tools, "\x00") >= maxOpenTools {
					continue
				}
				name := validate.Label(tc.DisplayName)
				if name == "" {
					name = validate.Label(tc.Name)
				}
				if name == "" {
					name = "tool"
				}
				add(agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: id, Name: name, OccurredAt: at})
				st.tools += id + "\x00"
			}
			if done {
				add(agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: id, Outcome: out})
				st.tools = strings.Replace(st.tools, id+"\x00", "", 1)
				if tc.Name == completeTask {
					finished = out
				}
			}
		}
		if finished != "" {
			// A subagent ends by calling complete_task (Gemini CLI 0.61):
			// no text reply follows.
			st.open, st.tools = false, ""
			add(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: finished, OccurredAt: at})
			break
		}
		// A reply with text and no tool call ends the turn; a reply that
		// calls tools is followed by their results and another reply.
		if len(r.ToolCalls) == 0 && contentText(r.Content) != "" {
			st.open, st.tools = false, ""
			add(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: at})
		}
	case "error":
		if st.open {
			st.open, st.tools = false, ""
			// its content is the error Gemini CLI showed (an API, quota or
			// auth error): the snapshot's error
			add(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeError, OccurredAt: at,
				Summary: validate.ErrorText(contentText(r.Content))})
		}
	case "info":
		if st.open && strings.HasPrefix(contentText(r.Content), "Request cancelled") {
			st.open, st.tools = false, ""
			add(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeCancelled, OccurredAt: at})
		}
	}
	e.after = st
	return e
}

// userText returns a user message's text and whether it is a prompt the
// user typed: not a tool's functionResponse, not the session context the
// CLI sends first.
func userText(content []byte) (string, bool) {
	var parts []part
	if json.Unmarshal(content, &parts) != nil {
		var s string
		if json.Unmarshal(content, &s) != nil {
			return "", false
		}
		parts = []part{{Text: &s}}
	}
	var b strings.Builder
	for _, p := range parts {
		if p.FunctionResponse != nil {
			return "", false
		}
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	text := strings.TrimSpace(b.String())
	if text == "" || strings.HasPrefix(text, "<session_context>") {
		return "", false
	}
	return text, true
}

// contentText returns the text of a content value (a string or a part
// list).
func contentText(content []byte) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return strings.TrimSpace(s)
	}
	var parts []part
	if json.Unmarshal(content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return strings.TrimSpace(b.String())
}

// invokeAgent is the tool a Gemini CLI session runs a subagent with.
const invokeAgent = "invoke_agent"

// invokeEnd returns the end of the subagent a finished invoke_agent call
// ran: cancelled when the call or the subagent was (ABORTED), error when
// the call failed or the subagent stopped short of its goal (a time or
// turn limit, an error, no complete_task call), else success.
func invokeEnd(tc chatToolCall) (subagentEnd, bool) {
	out, done := toolOutcome(tc.Status)
	if tc.Name != invokeAgent || !done || !validate.ValidID(tc.AgentID) {
		return subagentEnd{}, false
	}
	if out == agentbridge.OutcomeSuccess {
		var d struct {
			TerminateReason string `json:"terminateReason"` // GOAL, TIMEOUT, MAX_TURNS, ABORTED, ERROR…
		}
		_ = json.Unmarshal(tc.Display, &d) // not an object: no reason given
		switch d.TerminateReason {
		case "", "GOAL":
		case "ABORTED":
			out = agentbridge.OutcomeCancelled
		default:
			out = agentbridge.OutcomeError
		}
	}
	return subagentEnd{ID: tc.AgentID, Outcome: out}, true
}

// completeTask is the tool a Gemini CLI subagent calls to hand its result
// back: its end.
const completeTask = "complete_task"

func hasTool(set, id string) bool { return strings.Contains("\x00"+set, "\x00"+id+"\x00") }

// toolOutcome maps a Gemini CLI tool call status.
func toolOutcome(status string) (agentbridge.Outcome, bool) {
	switch status {
	case "success":
		return agentbridge.OutcomeSuccess, true
	case "error":
		return agentbridge.OutcomeError, true
	case "cancelled":
		return agentbridge.OutcomeCancelled, true
	}
	return "", false // validating, scheduled, awaiting_approval, executing
}

func equalEvents(a, b []agentbridge.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		ux, uy := x.Usage, y.Usage
		x.Usage, y.Usage = nil, nil
		if x != y || (ux == nil) != (uy == nil) || (ux != nil && *ux != *uy) {
			return false
		}
	}
	return true
}

func fingerprint(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
