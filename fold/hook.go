package fold

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// HookKind is what a hook signal tells the fold.
type HookKind uint8

// The hook signals the fold takes.
const (
	// HookNone changes nothing (an event the bridge takes but has no use for).
	HookNone HookKind = iota
	// HookTool: a tool is about to run (PreToolUse). It binds the prompt's
	// Key to the agent's ToolID, so that a permission prompt for it, which
	// names no tool id, can be matched to the journal's tool.
	HookTool
	// HookAsk: a permission prompt is shown (PermissionRequest, a
	// permission Notification). It opens a waiting wait with Reason.
	HookAsk
	// HookAnswered: the tool ran, failed or was refused (PostToolUse,
	// PostToolUseFailure, PermissionDenied): its prompt is over.
	HookAnswered
	// HookTurnEnd: the turn stopped or was interrupted, a new prompt was
	// submitted, or the session ended: every prompt that ran before is over.
	HookTurnEnd
)

// Hook is one hook signal as the fold takes it. Package hooks decodes the
// agents' payloads into it.
type Hook struct {
	Kind HookKind `json:"kind"`
	// Key names the prompt: a digest of the tool's name and input, the same
	// for the PreToolUse, PermissionRequest and PostToolUse of one call.
	Key string `json:"key,omitempty"`
	// ToolID is the agent's tool call id when the payload names it.
	ToolID string `json:"toolId,omitempty"`
	// Reason is what a HookAsk asks, as display text (bounded, redacted).
	Reason string `json:"reason,omitempty"`
	// At is when the hook ran, epoch ms, on the bridge's clock.
	At int64 `json:"at,omitempty"`
}

// HookNotified is the Key of a prompt known only from a notification,
// which names the tool but not its input: any answer ends it, and it adds
// nothing while a prompt a hook named is open (the same dialog).
const HookNotified = "notified"

// maxHookMemory bounds the bindings and the settled prompts a session
// remembers: enough for the parallel calls of one turn.
const maxHookMemory = 64

// hookState is what the hooks of a session told the fold, beyond its
// open waits.
type hookState struct {
	bind    []hookMark // recent PreToolUse: key → tool, oldest first
	settled []hookMark // prompts and tools known to be over, oldest first
	fence   int64      // a prompt that ran at or before this is over
}

type hookMark struct {
	key, tool string
	at        int64
}

func (h *hookState) clone() *hookState {
	if h == nil {
		return nil
	}
	c := *h
	c.bind = append([]hookMark(nil), h.bind...)
	c.settled = append([]hookMark(nil), h.settled...)
	return &c
}

func remember(list []hookMark, m hookMark) []hookMark {
	if len(list) >= maxHookMemory {
		list = append(list[:0:0], list[1:]...)
	}
	return append(list, m)
}

// fenceAt raises the fence to at (a turn's start or end the journal dates).
func (h *hookState) fenceAt(at int64) {
	if h != nil && at > h.fence {
		h.fence = at
	}
}

func (h *hookState) settle(key, tool string, at int64) {
	h.settled = remember(h.settled, hookMark{key, tool, at})
}

// boundTool returns the tool the latest PreToolUse bound key to, "" if none.
func (h *hookState) boundTool(key string) string {
	for i := len(h.bind) - 1; i >= 0; i-- {
		if h.bind[i].key == key {
			return h.bind[i].tool
		}
	}
	return ""
}

// over reports whether a prompt for key and tool (tool "" when unknown)
// that ran at at is known to be over already: a late or out-of-order hook.
// A prompt known only from a notification names no tool: any answer at
// or after it proves it over (Claude Code notifies some seconds after
// its dialog appeared, and that hook may reach the bridge after the
// answer's).
func (h *hookState) over(key, tool string, at int64) bool {
	if at <= h.fence {
		return true
	}
	for _, m := range h.settled {
		switch {
		case tool != "" && m.tool == tool:
			return true
		case key == HookNotified && m.at >= at:
			return true
		case tool == "" && m.key == key && m.at >= at:
			return true
		}
	}
	return false
}

// hookWaitID is the wait id of a prompt: an identity value derived from
// its key and tool, stable across duplicates of the same hook.
func hookWaitID(key, tool string) string {
	sum := sha256.Sum256([]byte(key + "\x00" + tool))
	return "hook-" + hex.EncodeToString(sum[:10])
}

// newerHookWaits returns the open waits hooks opened after at (0: none is
// newer, the event carries no time to compare with).
func (s *Session) newerHookWaits(at int64) []openWait {
	if at == 0 || s.hk == nil {
		return nil
	}
	var keep []openWait
	for _, w := range s.waits {
		if w.hook && w.at > at {
			keep = append(keep, w)
		}
	}
	return keep
}

// closeHookWaits closes the hook waits match selects and reports whether
// any closed; it leaves the status to the caller.
func (s *Session) closeHookWaits(match func(*openWait) bool) bool {
	n := 0
	for i := range s.waits {
		if s.waits[i].hook && match(&s.waits[i]) {
			continue
		}
		s.waits[n] = s.waits[i]
		n++
	}
	closed := n < len(s.waits)
	s.waits = s.waits[:n]
	return closed
}

// Hook folds a hook's signal, the second signal beside the journal, and
// returns the lifecycle events it folded (dated At: when the agent ran
// the hook) (none when it changes nothing:
// a duplicate, a late or an out-of-order hook). The rules:
//
//   - HookTool binds Key to ToolID; nothing shown changes.
//   - HookAsk opens a waiting wait (an id derived from Key and the bound
//     tool) with Reason, shown before any wait the journal opened. It is
//     ignored when the same prompt is open already (a duplicate), when
//     its tool or prompt is already over (a PostToolUse or the journal's
//     tool.finished came first), when it ran at or before the fence (the
//     latest turn start or end the journal dated, or HookTurnEnd), or when
//     the session is exited (a resumed process starts it again first).
//   - HookAnswered closes the wait of that tool (or, with no tool known, of
//     that Key opened at or before At) and any HookNotified wait opened at
//     or before At, and remembers the prompt as over.
//   - HookTurnEnd closes every wait hooks opened at or before At and raises
//     the fence to At.
//
// The journal's side is in the fold: tool.finished closes the hook's wait
// for that tool; turn.started and agent.done close the hook waits older
// than their occurredAt; agent.exited closes all. A session rebuilt from
// its journal (a rescan, a restart of the bridge) starts without hook
// state: the next hook brings it back.
func (s *Session) Hook(h Hook) []agentbridge.Event {
	if s.hk == nil {
		s.hk = &hookState{}
	}
	st := s.hk
	switch h.Kind {
	case HookTool:
		if validate.ValidID(h.Key) && validate.ValidID(h.ToolID) {
			st.bind = remember(st.bind, hookMark{h.Key, h.ToolID, h.At})
		}
	case HookAsk:
		if !validate.ValidID(h.Key) {
			return nil
		}
		tool := h.ToolID
		if tool == "" {
			tool = st.boundTool(h.Key)
		}
		if st.over(h.Key, tool, h.At) || s.ended != nil {
			return nil // late, or from a process that is gone
		}
		if h.Key == HookNotified && slices.ContainsFunc(s.waits, func(w openWait) bool { return w.hook }) {
			return nil
		}
		e := agentbridge.Event{Kind: agentbridge.KindWaitStarted, OccurredAt: max(h.At, 0), WaitID: hookWaitID(h.Key, tool),
			State: agentbridge.StatusWaiting, Reason: text.Bound(h.Reason, validate.MaxWaitingFor)}
		if len(s.Apply(e)) > 0 { // a duplicate, or too many open waits
			return nil
		}
		w := &s.waits[len(s.waits)-1]
		w.hook, w.key, w.tool, w.at = true, h.Key, tool, h.At
		s.showWaits()
		return []agentbridge.Event{e}
	case HookAnswered:
		tool := h.ToolID
		if tool == "" {
			tool = st.boundTool(h.Key)
		}
		st.settle(h.Key, tool, h.At)
		return s.finishHookWaits(h.At, func(w *openWait) bool {
			if w.key == HookNotified {
				return w.at <= h.At
			}
			if tool != "" && w.tool != "" {
				return w.tool == tool
			}
			return w.key == h.Key && w.at <= h.At
		})
	case HookTurnEnd:
		st.fenceAt(h.At)
		return s.finishHookWaits(h.At, func(w *openWait) bool { return w.at <= h.At })
	}
	return nil
}

// finishHookWaits folds a wait.finished, at at, for every hook wait match
// selects.
func (s *Session) finishHookWaits(at int64, match func(*openWait) bool) []agentbridge.Event {
	var ids []string
	for i := range s.waits {
		if s.waits[i].hook && match(&s.waits[i]) {
			ids = append(ids, s.waits[i].id)
		}
	}
	var out []agentbridge.Event
	for _, id := range ids {
		e := agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: max(at, 0), WaitID: id}
		if len(s.Apply(e)) == 0 {
			out = append(out, e)
		}
	}
	return out
}

var hookKindNames = [...]string{"none", "tool", "ask", "answered", "turn-end"}

// String names the kind: none, tool, ask, answered, turn-end.
func (k HookKind) String() string {
	if int(k) < len(hookKindNames) {
		return hookKindNames[k]
	}
	return "unknown"
}

// MarshalText gives the kind's name, for logs and golden files.
func (k HookKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }
