package e2e

import (
	"bytes"
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
)

// This file lays recorded journals into a bridge's home the way their
// agents write them, and sums their token counts with a reader of each
// format of its own (what each agent's records mean, not what the bridge's
// sources make of them), for TestHistoryReplayMatchesJournalsAcrossKill.

// recording is one recorded journal of the repository's testdata (the
// SOURCES.md of each directory says where it comes from and under which
// licence) and how the test replays it.
type recording struct {
	harness string // the harness whose journal it is
	src     string // the file, from the repository's root
	pre     int    // how many of its records are written before the bridge starts
	// old: the whole journal is written before the bridge starts, and
	// made a day old once the bridge has it in its history (a session that
	// ended earlier in the day): a bridge started again does not read it
	// (it is older than its window), so only its history keeps it.
	old bool
	// agent, when set, is the command name of the agent's process, which
	// the bridge binds the session to, ending it when there is none: a
	// stand-in of it (startFakeAgent) runs while the journal is replayed,
	// as the agent ran while it wrote it.
	agent string
	// byCwd: the bridge finds the agent's process by its name and working
	// directory (else by the journal it holds open for writing). The
	// stand-in runs in a directory of the test's, which replaces the one
	// recorded in the journal (the recordings' own were their recorders'
	// throwaway ones).
	byCwd bool
}

// recordings are sessions of four agents on several days, each journal
// with token counts: Claude Code's (a record per content block, the
// message's counts repeated on each), Codex's (cumulative totals,
// repeated), Pi's and Qwen Code's (a record per reply). All were written by
// the real CLIs (Irrlicht's recordings and this project's live suite).
var recordings = []recording{
	{harness: "claude-code", src: "sources/claudecode/testdata/journals/v2.1-irrlicht-13-full-lifecycle-continue-8a525d27.jsonl", pre: 20},
	{harness: "claude-code", src: "sources/claudecode/testdata/journals/v2.1-irrlicht-07-tool-denial-and-esc-db57d2ab.jsonl", pre: 8},
	{harness: "claude-code", src: "sources/claudecode/testdata/journals/v2.1-irrlicht-15-permission-hooks-a845d6c4.jsonl", pre: 10},
	{harness: "claude-code", src: "sources/claudecode/testdata/journals/v2.1-irrlicht-16-ask-user-question-issue-150.jsonl", pre: 40},
	{harness: "claude-code", src: "sources/claudecode/testdata/journals/v2.1-irrlicht-10-full-lifecycle-839f0678.jsonl", pre: 4},
	{harness: "claude-code", src: "sources/claudecode/testdata/journals/v2.1-irrlicht-agent-question-pending.jsonl", old: true},
	{harness: "claude-code", src: "sources/claudecode/testdata/journals/v2.1-irrlicht-interrupted-turn.jsonl", pre: 5},
	{harness: "claude-code", src: "sources/claudecode/testdata/journals/v2.1.332-live-bash-approved.jsonl", pre: 2},
	{harness: "claude-code", src: "sources/claudecode/testdata/journals/v2.1.242-live-thinking-then-text.jsonl"},
	{harness: "codex", agent: "codex", src: "sources/codex/testdata/rollouts/current-multi-turn/rollout-multi-turn.jsonl", pre: 10},
	{harness: "codex", agent: "codex", src: "sources/codex/testdata/rollouts/current-model-switch/rollout-2026-05-23T21-21-23-019e5648-f9f1-7c21-adae-ebe9ce6f518b.jsonl", pre: 7},
	{harness: "codex", agent: "codex", src: "sources/codex/testdata/rollouts/current-toolcall/rollout-2026-04-26T11-29-13-019dc91f-21e4-78d3-9ed1-31d84a0a2c7a.jsonl"},
	{harness: "pi", agent: "pi", byCwd: true, src: "sources/pi/testdata/journals/live-0.73.1-tool.jsonl", pre: 2},
	{harness: "pi", agent: "pi", byCwd: true, src: "sources/pi/testdata/journals/live-0.73.1-interrupt.jsonl"},
	{harness: "pi", agent: "pi", byCwd: true, src: "sources/pi/testdata/journals/two-sessions-1.jsonl", pre: 3},
	{harness: "pi", agent: "pi", byCwd: true, src: "sources/pi/testdata/journals/two-sessions-2.jsonl"},
	{harness: "pi", agent: "pi", byCwd: true, src: "sources/pi/testdata/journals/checkpoint-rewind.jsonl", old: true},
	{harness: "qwen-code", agent: "qwen", byCwd: true, src: "sources/qwen/testdata/journals/v0.24.4-tui-approve-deny-esc.jsonl", pre: 6},
	{harness: "qwen-code", agent: "qwen", byCwd: true, src: "sources/qwen/testdata/journals/v0.24.4-headless-prompt.jsonl"},
}

// journal is a recording laid out for one bridge's home.
type journal struct {
	recording
	source   string   // the bridge's source of the harness
	session  string   // the session's id, as its agent names it
	recorded string   // the directory the recording names
	cwd      string   // the session's directory here
	path     string   // where its agent writes it in the home
	lines    [][]byte // its records (with cwd for recorded, for an agent run here)
	written  int      // how many are written
}

// header is what the test reads of any record to place a journal: its
// session's id, directory and first time.
type header struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Timestamp string `json:"timestamp"`
	Payload   struct {
		ID  string `json:"id"`
		Cwd string `json:"cwd"`
	} `json:"payload"`
}

// sourceOf is the bridge's source of each harness used.
var sourceOf = map[string]string{"claude-code": "claude-code", "codex": "codex", "pi": "pi", "qwen-code": "qwen"}

// settings are the agents' settings files the recordings were made with,
// by their place in the home: Qwen Code ran in its "default" approval mode
// (the live suite's settings), in which it asks before a shell command.
var settings = map[string]string{
	".qwen/settings.json": `{"tools": {"approvalMode": "default"}}`,
}

// loadJournals writes the agents' settings into home and reads the
// recordings, placing them in home as their agents would write them
// (nothing is written yet); the directories of the agents run here are
// made under work, and their stand-ins started.
func loadJournals(t *testing.T, home, work string) []*journal {
	t.Helper()
	for name, text := range settings {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var js []*journal
	for _, r := range recordings {
		data, err := os.ReadFile(filepath.Join(repoRoot, r.src))
		if err != nil {
			t.Fatal(err)
		}
		j := &journal{recording: r, source: sourceOf[r.harness]}
		for l := range bytes.Lines(data) {
			if l = bytes.TrimRight(l, "\n"); len(l) > 0 {
				j.lines = append(j.lines, l)
			}
		}
		var first time.Time
		for _, l := range j.lines {
			var h header
			if json.Unmarshal(l, &h) != nil {
				continue
			}
			switch {
			case r.harness == "codex" && h.Type == "session_meta":
				j.session, j.recorded = h.Payload.ID, h.Payload.Cwd
			case r.harness == "pi" && h.Type == "session":
				j.session, j.recorded = h.ID, h.Cwd
			case r.harness == "claude-code" || r.harness == "qwen-code":
				j.session, j.recorded = cmp.Or(j.session, h.SessionID), cmp.Or(j.recorded, h.Cwd)
			}
			if at, err := time.Parse(time.RFC3339Nano, h.Timestamp); err == nil && first.IsZero() {
				first = at
			}
		}
		if r.old {
			j.pre = len(j.lines)
		}
		if j.session == "" || j.recorded == "" || first.IsZero() || j.pre > len(j.lines) {
			t.Fatalf("%s: no session id, directory or time found (or pre too large)", r.src)
		}
		j.cwd = j.recorded
		if r.byCwd {
			j.cwd = agentDir(t, js, j, work)
			old, _ := json.Marshal(j.recorded)
			repl, _ := json.Marshal(j.cwd)
			for i, l := range j.lines {
				j.lines[i] = bytes.ReplaceAll(l, old, repl)
			}
		}
		dashed := strings.ReplaceAll(j.cwd, "/", "-")
		switch r.harness {
		case "claude-code": // ~/.claude/projects/<cwd, / as ->/<session>.jsonl
			j.path = filepath.Join(home, ".claude", "projects", dashed, j.session+".jsonl")
		case "codex": // ~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl
			j.path = filepath.Join(home, ".codex", "sessions", first.Format("2006/01/02"), filepath.Base(r.src))
		case "pi": // ~/.pi/agent/sessions/--<cwd, / as ->--/<time>_<session>.jsonl
			j.path = filepath.Join(home, ".pi", "agent", "sessions", "-"+dashed+"--",
				strings.NewReplacer(":", "-", ".", "-").Replace(first.UTC().Format("2006-01-02T15:04:05.000Z"))+"_"+j.session+".jsonl")
		case "qwen-code": // ~/.qwen/projects/<cwd, / as ->/chats/<session>.jsonl
			j.path = filepath.Join(home, ".qwen", "projects", dashed, "chats", j.session+".jsonl")
		}
		if r.agent != "" && !r.byCwd {
			if err := os.MkdirAll(filepath.Dir(j.path), 0o700); err != nil {
				t.Fatal(err)
			}
			startFakeAgent(t, r.agent, work, j.path)
		}
		js = append(js, j)
	}
	return js
}

// agentDir returns the directory j's agent runs in here: the one of an
// earlier journal recorded in the same directory by the same agent (two
// sessions of one directory), else a new one under work, where a stand-in
// of the agent is started.
func agentDir(t *testing.T, js []*journal, j *journal, work string) string {
	t.Helper()
	for _, o := range js {
		if o.agent == j.agent && o.recorded == j.recorded {
			return o.cwd
		}
	}
	dir := filepath.Join(work, j.agent+"-"+j.session[:8])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	startFakeAgent(t, j.agent, dir)
	return dir
}

// write appends j's next n records, each in one write, as its agent does.
func (j *journal) write(t *testing.T, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(j.path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for ; n > 0 && j.written < len(j.lines); n-- {
		if _, err := f.Write(append(j.lines[j.written], '\n')); err != nil {
			t.Fatal(err)
		}
		j.written++
	}
}

// modelCall is one model call's tokens as a journal records them.
type modelCall struct {
	harness, source, session, model string
	at                              time.Time
	usage                           agentbridge.Usage
}

// calls returns the model calls j records, read by what each agent's
// format means:
//
//   - Claude Code: an "assistant" record's message.usage (input_tokens,
//     output_tokens, cache_read_input_tokens, cache_creation_input_tokens)
//     counts its message, message.id; a message written as several records
//     (one per content block) repeats its usage on each, the last holding
//     the final counts: one call per message id, its last record's counts
//     and model, at its last record's time (the test makes sure all records
//     of a message are of one day). A "<synthetic>" message (a local
//     notice) counts zero.
//   - Codex: an event_msg "token_count" holds info.total_token_usage, the
//     session's cumulative totals (repeated unchanged at each rate-limit
//     update); input_tokens includes cached_input_tokens, output_tokens
//     includes reasoning_output_tokens. The calls since the previous count
//     are the difference, at the record's time, by the model the last
//     turn_context named.
//   - Pi: a "message" entry whose message.role is "assistant" is one reply,
//     its message.usage (input, output, cacheRead, cacheWrite) that call's,
//     at the entry's time, by message.model.
//   - Qwen Code: a record with usageMetadata is one reply (Gemini API
//     counts): promptTokenCount includes cachedContentTokenCount, the
//     output is candidatesTokenCount plus thoughtsTokenCount; at the
//     record's time, by its model.
func (j *journal) calls(t *testing.T) []modelCall {
	t.Helper()
	var out []modelCall
	call := func(at string, model string, u agentbridge.Usage) modelCall {
		tm, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			t.Fatalf("%s: a model call without a time: %v", j.src, err)
		}
		return modelCall{harness: j.harness, source: j.source, session: j.session, model: model, at: tm, usage: u}
	}
	switch j.harness {
	case "claude-code":
		var order []string
		byID := map[string]modelCall{}
		for _, l := range j.lines {
			var r struct {
				Type, Timestamp string
				Message         struct {
					ID, Model string
					Usage     *struct {
						Input      int64 `json:"input_tokens"`
						Output     int64 `json:"output_tokens"`
						CacheRead  int64 `json:"cache_read_input_tokens"`
						CacheWrite int64 `json:"cache_creation_input_tokens"`
					}
				}
			}
			if json.Unmarshal(l, &r) != nil || r.Type != "assistant" || r.Message.Usage == nil {
				continue
			}
			u := r.Message.Usage
			c := call(r.Timestamp, r.Message.Model, agentbridge.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheWrite})
			prev, seen := byID[r.Message.ID]
			if !seen {
				order = append(order, r.Message.ID)
			} else if day(prev.at) != day(c.at) {
				t.Fatalf("%s: message %s spans two days; the test dates a message by its last record", j.src, r.Message.ID)
			}
			byID[r.Message.ID] = c
		}
		for _, id := range order {
			if c := byID[id]; c.model != "<synthetic>" {
				out = append(out, c)
			}
		}
	case "codex":
		type counts struct {
			Input  int64 `json:"input_tokens"`
			Cached int64 `json:"cached_input_tokens"`
			Output int64 `json:"output_tokens"`
		}
		var model string
		var last counts
		for _, l := range j.lines {
			var r struct {
				Type, Timestamp string
				Payload         struct {
					Type, Model string
					Info        *struct {
						Total *counts `json:"total_token_usage"`
					}
				}
			}
			if json.Unmarshal(l, &r) != nil {
				continue
			}
			switch {
			case r.Type == "turn_context":
				model = r.Payload.Model
			case r.Type == "event_msg" && r.Payload.Type == "token_count" && r.Payload.Info != nil && r.Payload.Info.Total != nil:
				tot := *r.Payload.Info.Total
				if tot == last {
					continue
				}
				d := counts{tot.Input - last.Input, tot.Cached - last.Cached, tot.Output - last.Output}
				out = append(out, call(r.Timestamp, model, agentbridge.Usage{InputTokens: d.Input - d.Cached, OutputTokens: d.Output, CacheReadTokens: d.Cached}))
				last = tot
			}
		}
	case "pi":
		for _, l := range j.lines {
			var r struct {
				Type, Timestamp string
				Message         struct {
					Role, Model string
					Usage       *struct{ Input, Output, CacheRead, CacheWrite int64 }
				}
			}
			if json.Unmarshal(l, &r) != nil || r.Type != "message" || r.Message.Role != "assistant" || r.Message.Usage == nil {
				continue
			}
			u := r.Message.Usage
			out = append(out, call(r.Timestamp, r.Message.Model, agentbridge.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheWrite}))
		}
	case "qwen-code":
		for _, l := range j.lines {
			var r struct {
				Timestamp, Model string
				UsageMetadata    *struct {
					Prompt     int64 `json:"promptTokenCount"`
					Candidates int64 `json:"candidatesTokenCount"`
					Thoughts   int64 `json:"thoughtsTokenCount"`
					Cached     int64 `json:"cachedContentTokenCount"`
				}
			}
			if json.Unmarshal(l, &r) != nil || r.UsageMetadata == nil {
				continue
			}
			u := r.UsageMetadata
			out = append(out, call(r.Timestamp, r.Model, agentbridge.Usage{InputTokens: u.Prompt - u.Cached, OutputTokens: u.Candidates + u.Thoughts, CacheReadTokens: u.Cached}))
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no token counts", j.src)
	}
	return out
}

// day is t's date in UTC, as GET /v1/usage?by=day&tz=UTC keys it.
func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }
