package gemini

import (
	"regexp"
	"strconv"
	"strings"

	json "github.com/go-json-experiment/json"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// Brain maps one Antigravity CLI conversation transcript
// (brain/<conversation>/.system_generated/logs/transcript.jsonl): one step
// a line, {step_index, source, type, status, created_at, content,
// tool_calls}. It is plain append-only; Brain keeps the little a turn
// needs: whether one is open, the tools the last planner response
// called, and the subagents it started that have not reported back.
type Brain struct {
	started  bool
	open     bool
	titled   bool
	model    string
	tools    []string          // tool ids started by the last planner response, not finished
	children map[string]string // running subagent conversation id → ""
	held     bool              // the turn's own reply ended while subagents run
	heldAt   int64
}

type brainStep struct {
	StepIndex *int            `json:"step_index"`
	Source    string          `json:"source"`
	Type      string          `json:"type"`
	Status    string          `json:"status"`
	CreatedAt string          `json:"created_at"`
	Content   string          `json:"content"`
	ToolCalls []brainToolCall `json:"tool_calls"`
}

type brainToolCall struct {
	Name string `json:"name"`
	Args struct {
		Subagents string `json:"Subagents"` // a JSON array in a string
	} `json:"args"`
}

var (
	// the model Antigravity says the user picked, in a prompt's
	// <USER_SETTINGS_CHANGE> block
	modelChange = regexp.MustCompile("setting `Model Selection` from [^\\n]*? to ([^\\n.]+(?:\\.[0-9]+[^\\n.]*)*)\\.")
	// a created subagent's conversation id in an INVOKE_SUBAGENT step
	childConv = regexp.MustCompile(`"conversationId":\s*"([A-Za-z0-9._:@-]{1,128})"`)
	// the sender of a subagent's message to its parent
	childSender = regexp.MustCompile(`sender=([A-Za-z0-9._:@-]{1,128})`)
)

// Line maps one step of the conversation id. code is a sources.Code* for
// a line that was skipped.
func (b *Brain) Line(id string, line []byte) (events []agentbridge.Event, code string) {
	if len(line) == 0 || line[0] != '{' {
		return nil, sources.CodeInvalidJSON
	}
	var s brainStep
	if err := json.Unmarshal(line, &s); err != nil {
		return nil, sources.CodeInvalidJSON
	}
	if s.StepIndex == nil || s.Type == "" {
		return nil, sources.CodeInvalidRecord
	}
	at := sources.Millis(s.CreatedAt)
	add := func(e agentbridge.Event) { events = append(events, e) }
	if !b.started {
		b.started = true
		add(agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: at})
	}
	step := strconv.Itoa(*s.StepIndex)
	switch {
	case s.Type == "USER_INPUT" && s.Source == "USER_EXPLICIT":
		b.finishTools(add, agentbridge.OutcomeSuccess)
		b.open, b.held = true, false
		add(agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "step-" + step, OccurredAt: at})
		if m := modelChange.FindStringSubmatch(s.Content); m != nil {
			if name := validate.Model(m[1]); name != "" && name != b.model {
				b.model = name
				add(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Model: name})
			}
		}
		if !b.titled {
			if t := validate.Title(userRequest(s.Content)); t != "" {
				b.titled = true
				add(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Title: t})
			}
		}
	case s.Type == "PLANNER_RESPONSE":
		if !b.open {
			break
		}
		b.finishTools(add, agentbridge.OutcomeSuccess)
		if len(s.ToolCalls) > 0 {
			b.held = false
			for i, tc := range s.ToolCalls {
				tid := "step-" + step + "-" + strconv.Itoa(i)
				name := validate.Label(tc.Name)
				if name == "" {
					name = "tool"
				}
				b.tools = append(b.tools, tid)
				add(agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: tid, Name: name, OccurredAt: at})
			}
			break
		}
		// A response with neither text nor a tool call (thinking only) is
		// no reply: Antigravity refuses it ("model output must contain
		// either output text or tool calls") and asks the model again.
		if strings.TrimSpace(s.Content) == "" {
			break
		}
		// The reply is over. While subagents it started still run, the
		// turn is held open and ends when the last one reports back.
		if len(b.children) > 0 {
			b.held, b.heldAt = true, at
			break
		}
		b.open = false
		add(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: at})
	case s.Type == "INVOKE_SUBAGENT":
		b.finishTools(add, stepOutcome(s.Status))
		for _, m := range childConv.FindAllStringSubmatch(s.Content, -1) {
			child := m[1]
			if child == id || b.children[child] != "" {
				continue
			}
			if b.children == nil {
				b.children = map[string]string{}
			}
			b.children[child] = "running"
			add(agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: child, ParentAgentID: id, Type: "subagent", OccurredAt: at})
		}
	case s.Type == "SYSTEM_MESSAGE":
		// A subagent's message to its parent ends that subagent's work.
		if m := childSender.FindStringSubmatch(s.Content); m != nil && b.children[m[1]] != "" {
			b.childDone(add, m[1], agentbridge.OutcomeSuccess, at)
		}
	case s.Type == "ERROR_MESSAGE":
		// Antigravity retries on its own after a model error; the turn goes on.
	case s.Source == "MODEL" && s.Type != "CHECKPOINT":
		// Any other model step is a tool's own step: it finishes the
		// oldest tool the last planner response called.
		if len(b.tools) > 0 && stepDone(s.Status) {
			tid := b.tools[0]
			b.tools = b.tools[1:]
			add(agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: tid, Outcome: stepOutcome(s.Status)})
		}
	}
	return events, ""
}

// ChildDone reports that subagent child of this conversation ended (its
// own transcript says so).
func (b *Brain) ChildDone(child string, outcome agentbridge.Outcome, at int64) []agentbridge.Event {
	if b.children[child] == "" {
		return nil
	}
	var out []agentbridge.Event
	b.childDone(func(e agentbridge.Event) { out = append(out, e) }, child, outcome, at)
	return out
}

func (b *Brain) childDone(add func(agentbridge.Event), child string, outcome agentbridge.Outcome, at int64) {
	delete(b.children, child)
	add(agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: child, Outcome: outcome})
	if b.held && len(b.children) == 0 {
		b.held, b.open = false, false
		add(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: max(at, b.heldAt)})
	}
}

// Done reports whether the conversation's last turn is over (for a
// subagent's own transcript: its work is done).
func (b *Brain) Done() bool { return b.started && !b.open }

func (b *Brain) finishTools(add func(agentbridge.Event), outcome agentbridge.Outcome) {
	for _, tid := range b.tools {
		add(agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: tid, Outcome: outcome})
	}
	b.tools = b.tools[:0]
}

// userRequest returns the text the user typed: the <USER_REQUEST> block
// of a USER_INPUT step, or all of it when there is none.
func userRequest(content string) string {
	const open, end = "<USER_REQUEST>", "</USER_REQUEST>"
	if i := strings.Index(content, open); i >= 0 {
		rest := content[i+len(open):]
		if j := strings.Index(rest, end); j >= 0 {
			rest = rest[:j]
		}
		return strings.TrimSpace(rest)
	}
	return strings.TrimSpace(content)
}

func stepDone(status string) bool {
	switch status {
	case "DONE", "ERROR", "FAILED", "CANCELED", "CANCELLED":
		return true
	}
	return false
}

func stepOutcome(status string) agentbridge.Outcome {
	switch status {
	case "ERROR", "FAILED":
		return agentbridge.OutcomeError
	case "CANCELED", "CANCELLED":
		return agentbridge.OutcomeCancelled
	}
	return agentbridge.OutcomeSuccess
}
