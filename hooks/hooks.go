// Package hooks decodes the payloads the agents' hook commands receive on
// standard input (Claude Code's, Codex's, Gemini CLI's and Qwen Code's
// hooks, which share one shape)
// into signals for the fold (fold.Hook). Decoding is pure: bytes in, a
// Signal or a typed *Error out; nothing of a payload is kept raw. Tool
// inputs are reduced to a short reason ("Approve Bash: git push"),
// redacted, bounded and with paths shortened, and to a digest that names
// the call across its hooks.
//
// What each event means to an agent is not here: each source package
// declares its agent's vocabulary (sources.Hooks) in its registration, and
// Decode looks it up in the registry by source id (docs/hooks.md, "Where
// each agent's hooks are declared"). The type lives in package sources,
// which this package imports and which must never import this one.
package hooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"

	"github.com/agentbridge/agentbridge/text"

	"github.com/agentbridge/agentbridge/validate"
)

// MaxPayload bounds a payload in bytes, as every body of the API.
const MaxPayload = 1 << 20

// ErrUnknownSource: no hook decoder for that source.
var ErrUnknownSource = errors.New("hooks: no hooks for this source")

// Error codes of a payload that is refused; each is also the diagnostic
// code the bridge records.
const (
	CodeInvalidJSON    = "hook-invalid-json"    // not a JSON object
	CodeInvalidPayload = "hook-invalid-payload" // a JSON object without a usable session id or event name
	CodeUnknownEvent   = "hook-unknown-event"   // an event this source's hooks do not have
	CodeTooLarge       = "hook-too-large"       // over MaxPayload
)

// Error is a refused payload: a code above and a message that carries no
// payload content and no paths.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return "hooks: " + e.Code + ": " + e.Message }

func fail(code, format string, a ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// Signal is one decoded hook.
type Signal struct {
	Event     string    `json:"event"`     // the agent's hook event name
	SessionID string    `json:"sessionId"` // the session it names
	Hook      fold.Hook `json:"hook"`      // At is left 0: the caller stamps it
	// Tool and Request say what a PermissionRequest asks, for whoever
	// answers it: the tool's name and what the call would do (the whole
	// command, a file), as display text (redacted, bounded to
	// MaxRequest characters).
	Tool    string `json:"tool,omitempty"`
	Request string `json:"request,omitempty"`
}

// MaxRequest bounds Signal.Request, in characters.
const MaxRequest = 4096

// The vocabularies (which event means what, how a Notification is read)
// are the agents' own: each source package declares its sources.Hooks in
// its registration, and Decode, Sources and Events look them up in the
// registry. A program (or test) links the sources it takes hooks from,
// usually by importing sources/all.

// Sources lists the source ids that take hooks, sorted.
func Sources() []string {
	var ids []string
	for _, r := range sources.HookRegistrations() {
		ids = append(ids, r.Info.ID)
	}
	return ids
}

// Events lists the hook events of a source that tell the bridge
// something, sorted (nil for a source without hooks): what `agentbridge
// hooks install` registers. Events the bridge takes but has no use for
// (SubagentStop) are not among them: each hook costs the agent a process.
func Events(source string) []string {
	a, ok := sources.LookupHooks(source)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(a.Events))
	for ev, k := range a.Events {
		if k != fold.HookNone {
			out = append(out, ev)
		}
	}
	slices.Sort(out)
	return out
}

// payload is the part of a hook payload the bridge reads. Both agents
// send snake_case fields.
type payload struct {
	Event            string               `json:"hook_event_name"`
	SessionID        string               `json:"session_id"`
	ToolName         string               `json:"tool_name"`
	ToolInput        json.RawMessage      `json:"tool_input"`
	ToolUseID        string               `json:"tool_use_id"`
	Message          string               `json:"message"`
	NotificationType string               `json:"notification_type"`
	Details          *sources.HookDetails `json:"details"` // Gemini CLI's Notification
}

// Decode decodes one payload of source. It fails with ErrUnknownSource, or
// an *Error for a payload it refuses.
func Decode(source string, body []byte) (Signal, error) {
	a, ok := sources.LookupHooks(source)
	if !ok {
		return Signal{}, ErrUnknownSource
	}
	if len(body) > MaxPayload {
		return Signal{}, fail(CodeTooLarge, "the payload is over %d bytes", MaxPayload)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return Signal{}, fail(CodeInvalidJSON, "the payload is not a JSON object")
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Signal{}, fail(CodeInvalidPayload, "a field of the payload has the wrong type")
		}
		return Signal{}, fail(CodeInvalidJSON, "the payload is not valid JSON")
	}
	if p.Event == "" {
		return Signal{}, fail(CodeInvalidPayload, "hook_event_name is missing")
	}
	kind, known := a.Events[p.Event]
	if !known {
		return Signal{}, fail(CodeUnknownEvent, "this source's hooks have no such event")
	}
	if !validate.ValidID(p.SessionID) {
		return Signal{}, fail(CodeInvalidPayload, "session_id is missing or not an identity value")
	}
	sig := Signal{Event: p.Event, SessionID: p.SessionID, Hook: fold.Hook{Kind: kind}}
	if validate.ValidID(p.ToolUseID) {
		sig.Hook.ToolID = p.ToolUseID
	}
	switch kind {
	case fold.HookTool, fold.HookAnswered:
		sig.Hook.Key = key(p.ToolName, p.ToolInput)
	case fold.HookAsk:
		if p.Event == "Notification" && a.Notify != nil {
			sig.Hook.Kind, sig.Hook.Reason = a.Notify(sources.HookNotification{Type: p.NotificationType, Message: p.Message, Details: p.Details})
			if sig.Hook.Kind == fold.HookAsk {
				sig.Hook.Key = fold.HookNotified
			}
			break
		}
		sig.Hook.Key = key(p.ToolName, p.ToolInput)
		sig.Hook.Reason = reason(p.ToolName, p.ToolInput)
		sig.Tool = validate.Label(p.ToolName)
		sig.Request = text.Display(detail(p.ToolInput), MaxRequest)
	}
	return sig, nil
}

// key names a tool call across its hooks: a digest of the tool's name and
// of what identifies its input (the command, else the file, else the whole
// input), so that a PermissionRequest whose input carries a justification
// the PreToolUse lacked (Codex) still matches.
func key(tool string, input json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	if d := detail(input); d != "" {
		h.Write([]byte(d))
	} else {
		var buf bytes.Buffer
		if json.Compact(&buf, input) == nil {
			h.Write(buf.Bytes())
		}
	}
	return "k" + hex.EncodeToString(h.Sum(nil)[:12])
}

// detailFields are the tool input fields that say what a call does, in
// the order they are looked for.
var detailFields = []string{"command", "cmd", "file_path", "notebook_path", "path", "url", "pattern", "query"}

// detail returns the input field that says what the call does, "" if none.
func detail(input json.RawMessage) string {
	if len(input) == 0 || input[0] != '{' {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, f := range detailFields {
		raw, ok := m[f]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) != "" {
			return s
		}
		var argv []string // Codex's shell: ["bash", "-lc", "git push"]
		if json.Unmarshal(raw, &argv) == nil && len(argv) > 0 {
			if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
				return argv[2]
			}
			return strings.Join(argv, " ")
		}
	}
	return ""
}

// reason is what a permission prompt asks, as display text: "Approve
// Bash: git push", "Approve Edit: …/main.go", "Approve mcp__github__merge".
func reason(tool string, input json.RawMessage) string {
	name := validate.Label(tool)
	if name == "" {
		name = "a tool"
	}
	r := "Approve " + name
	if d := detail(input); d != "" {
		r += ": " + d
	}
	return validate.Title(r)
}
