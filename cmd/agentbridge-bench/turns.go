package main

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The turn-heavy workload: journals in which every two records make a
// turn, the prompt and the answer that ends it, so that the bridge opens
// and closes a turn per two lines it reads. Both records are real ones,
// cut from the multi-turn templates (testdata/*/multi-turn.jsonl):
//
//   - Claude Code: the user's prompt record (a "user" record whose content
//     is the prompt's text) and the assistant's final answer (an
//     "assistant" record of text only with stop_reason "end_turn");
//   - Codex: the turn's task_started event and its task_complete event
//     (which carries the final answer as last_agent_message), after the
//     rollout's one session_meta record.
//
// Every turn is the pair rendered with fresh ids (the template's ids
// suffixed with the turn's number), as longJournal repeats bodies.

// turnTemplateFile is the template the turn records are cut from.
const turnTemplateFile = "multi-turn.jsonl"

// turnSource is one kind's turn: the records before the first turn (the
// Codex session_meta), the two records of a turn, and the prompt's text as
// it is encoded in the prompt record (Claude Code).
type turnSource struct {
	kind   string
	head   *template // nil for Claude Code
	turn   *template // the prompt record, then the answer record
	prompt []byte    // the JSON string of the prompt's text in turn (Claude Code)
}

// loadTurnSource cuts the turn records of kind out of its multi-turn
// template.
func loadTurnSource(kind string) (*turnSource, error) {
	name := "testdata/" + kind + "/" + turnTemplateFile
	data, err := templates.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("load turn template: %w", err)
	}
	whole, err := parseTemplate(turnTemplateFile, kind, data)
	if err != nil {
		return nil, err
	}
	var head, prompt, answer []byte
	var text []byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		var r struct {
			Type    string `json:"type"`
			IsMeta  bool   `json:"isMeta"`
			Message struct {
				Content    json.RawMessage `json:"content"`
				StopReason string          `json:"stop_reason"`
			} `json:"message"`
			Payload struct {
				Type string `json:"type"`
			} `json:"payload"`
		}
		if len(line) == 0 || json.Unmarshal(line, &r) != nil {
			continue
		}
		switch kind {
		case kindClaude:
			switch {
			case prompt == nil && r.Type == "user" && !r.IsMeta && bytes.HasPrefix(r.Message.Content, []byte(`"`)):
				prompt, text = line, r.Message.Content
			case prompt != nil && answer == nil && r.Type == "assistant" && r.Message.StopReason == "end_turn" && textOnly(r.Message.Content):
				answer = line
			}
		case kindCodex:
			switch {
			case head == nil && r.Type == "session_meta":
				head = line
			case prompt == nil && r.Type == "event_msg" && r.Payload.Type == "task_started":
				prompt = line
			case prompt != nil && answer == nil && r.Type == "event_msg" && r.Payload.Type == "task_complete":
				answer = line
			}
		}
	}
	if prompt == nil || answer == nil || (kind == kindCodex && head == nil) {
		return nil, fmt.Errorf("turn template %s: no prompt and answer records", name)
	}
	if kind == kindClaude && !bytes.Contains(prompt, text) {
		return nil, fmt.Errorf("turn template %s: the prompt's text is not where it was read", name)
	}
	pair := append(append(append(append([]byte(nil), prompt...), '\n'), answer...), '\n')
	ts := &turnSource{kind: kind, turn: &template{name: turnTemplateFile, kind: kind, session: whole.session, segs: cut(pair), size: len(pair)}, prompt: text}
	if head != nil {
		line := append(append([]byte(nil), head...), '\n')
		ts.head = &template{name: turnTemplateFile, kind: kind, session: whole.session, segs: cut(line), size: len(line)}
	}
	return ts, nil
}

// textOnly reports whether content is an array of text blocks only.
func textOnly(content json.RawMessage) bool {
	var blocks []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(content, &blocks) != nil || len(blocks) == 0 {
		return false
	}
	for _, b := range blocks {
		if b.Type != "text" {
			return false
		}
	}
	return true
}

// size is about the length of a journal of n turns (the ids' suffixes
// are not counted).
func (ts *turnSource) size(n int) int64 {
	s := int64(ts.turn.size) * int64(n)
	if ts.head != nil {
		s += int64(ts.head.size)
	}
	return s
}

// journal appends a journal of session with n turns, numbered from 1.
func (ts *turnSource) journal(dst []byte, session string, n int) []byte {
	if ts.head != nil {
		dst = ts.head.render(dst, session, 0, false)
	}
	for i := 1; i <= n; i++ {
		dst = ts.turn.render(dst, session, i, false)
	}
	return dst
}

// promptTurn is turn number n of session with prompt as the prompt's text
// (Claude Code only: a Codex turn's records carry no prompt).
func (ts *turnSource) promptTurn(session string, n int, prompt string) []byte {
	out := ts.turn.render(nil, session, n, false)
	q, _ := json.Marshal(prompt)
	return bytes.Replace(out, ts.prompt, q, 1)
}

// generateTurns writes old+recent turn-heavy journals of turns turns each
// under root, as generate lays its journals out.
func generateTurns(root string, old, recent, turns int, maxBytes int64) (*corpus, error) {
	src := map[string]*turnSource{}
	for _, k := range []string{kindClaude, kindCodex} {
		ts, err := loadTurnSource(k)
		if err != nil {
			return nil, err
		}
		src[k] = ts
	}
	return layOut(root, old, recent, maxBytes,
		func(kind string, _ int) int64 { return src[kind].size(turns) },
		func(dst []byte, kind string, i int) []byte {
			return src[kind].journal(dst, sessionUUID(kind, i), turns)
		})
}
