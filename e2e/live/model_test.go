package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Step is one scripted model reply: optional thinking, optional text, and
// optionally one tool call. Hold makes the server start the reply (HTTP
// headers only) and then hold it open until the client goes away, so that
// the agent can be interrupted before any output; Delay slows the reply
// down before its first content; Gate, when set, holds the reply until it
// is closed, so that a test can look at the agent mid-turn for as long as
// it needs.
type Step struct {
	// When, if set, makes the step answer only a turn whose last message
	// contains it (a subagent's first request carries its prompt; its
	// parent's next request carries a tool result): steps are taken in
	// order among those that match.
	When     string
	Thinking string
	Text     string
	Tool     *ToolCall
	Delay    time.Duration
	Hold     bool
	Gate     <-chan struct{}
}

// ToolCall is a tool call the model makes. Namespace names the tool
// namespace of a Responses API tool offered in one (Codex's
// "multi_agent_v1"); InputFrom, when set, computes the input from the
// last message of the request it answers (an id the agent returned
// earlier, e.g. a spawned subagent's).
type ToolCall struct {
	Name      string
	Input     map[string]any
	Namespace string
	InputFrom func(last string) map[string]any
}

// Request is one request the model server received.
type Request struct {
	Path string
	Turn bool   // it was an agent turn (it used up a step)
	Body []byte // the raw body
}

// dialect is one model API: it tells an agent's turn from the side
// requests a CLI makes (titles, routing, token counts) and writes a step
// as that API's streaming reply. Chat Completions and the Gemini API are
// further dialects of the same shape.
type dialect interface {
	// route answers requests that are not turns (and requests on paths the
	// dialect does not serve); it reports whether it answered.
	route(w http.ResponseWriter, r *http.Request, body []byte) bool
	// turn reports whether the request is an agent's turn.
	turn(body []byte) bool
	// reply writes st as a streamed reply; n numbers ids uniquely.
	reply(w http.ResponseWriter, f http.Flusher, body []byte, st Step, n int)
}

// modelServer is a scripted model server on 127.0.0.1: every agent turn
// request takes the next step of the script; side requests get a stock
// answer without using one up.
type modelServer struct {
	t       *testing.T
	d       dialect
	srv     *http.Server
	URL     string // http://127.0.0.1:PORT
	mu      sync.Mutex
	steps   []Step
	reqs    []Request
	n       int
	changed chan struct{} // closed and replaced on every request and hold
	holding int           // replies held open right now
}

func newModelServer(t *testing.T, d dialect) *modelServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &modelServer{t: t, d: d, URL: "http://" + l.Addr().String(), changed: make(chan struct{})}
	m.srv = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	go m.srv.Serve(l)
	t.Cleanup(func() { m.srv.Close() })
	return m
}

// Script appends steps.
func (m *modelServer) Script(steps ...Step) {
	m.mu.Lock()
	m.steps = append(m.steps, steps...)
	m.mu.Unlock()
}

// Turns returns the turn requests received so far.
func (m *modelServer) Turns() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Request
	for _, r := range m.reqs {
		if r.Turn {
			out = append(out, r)
		}
	}
	return out
}

// Log describes every request received, for failure messages.
func (m *modelServer) Log() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, r := range m.reqs {
		fmt.Fprintf(&b, "  %s turn=%v %d bytes\n", r.Path, r.Turn, len(r.Body))
	}
	return b.String()
}

// take removes and returns the first step that answers a turn whose last
// message is last (m.mu held).
func (m *modelServer) take(last string) Step {
	for i, st := range m.steps {
		if st.When == "" || strings.Contains(last, st.When) {
			m.steps = append(m.steps[:i:i], m.steps[i+1:]...)
			return st
		}
	}
	if os.Getenv("AGENTBRIDGE_LIVE_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "model server: no step for a turn whose last message is %.2000s\n", last)
	}
	return Step{Text: "Nothing more is scripted."}
}

// lastMessage is the raw JSON of the last message of a request that is
// not a system or developer message: the last of "messages" (Messages
// API), "input" (Responses API) or "contents" (Gemini API).
func lastMessage(body []byte) string {
	var v struct {
		Messages []json.RawMessage `json:"messages"`
		Input    []json.RawMessage `json:"input"`
		Contents []json.RawMessage `json:"contents"` // Gemini API
	}
	_ = json.Unmarshal(body, &v)
	for _, l := range [][]json.RawMessage{v.Messages, v.Input, v.Contents} {
		for i := len(l) - 1; i >= 0; i-- {
			var m struct {
				Role string `json:"role"`
			}
			_ = json.Unmarshal(l[i], &m)
			if m.Role != "system" && m.Role != "developer" {
				return string(l[i])
			}
		}
	}
	return ""
}

func (m *modelServer) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// waitFor waits until cond (called with m.mu held) holds.
func (m *modelServer) waitFor(what string, timeout time.Duration, cond func() bool) {
	m.t.Helper()
	deadline := time.After(slow(timeout))
	for {
		m.mu.Lock()
		ok, ch := cond(), m.changed
		m.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			m.t.Fatalf("model server: timed out waiting for %s; requests:\n%s", what, m.Log())
		}
	}
}

// WaitHolding waits until a held reply is open.
func (m *modelServer) WaitHolding(timeout time.Duration) {
	m.t.Helper()
	m.waitFor("a held reply", timeout, func() bool { return m.holding > 0 })
}

// AwaitDropped waits until no reply is held open any more: the agent
// dropped the one it was waiting for (an interrupt).
func (m *modelServer) AwaitDropped() {
	m.t.Helper()
	m.waitFor("the held reply to be dropped", 20*time.Second, func() bool { return m.holding == 0 })
}

// WaitTurns waits until n turn requests arrived.
func (m *modelServer) WaitTurns(n int, timeout time.Duration) {
	m.t.Helper()
	m.waitFor(fmt.Sprintf("%d turn requests", n), timeout, func() bool {
		c := 0
		for _, r := range m.reqs {
			if r.Turn {
				c++
			}
		}
		return c >= n
	})
}

// Left returns how many steps are still unused.
func (m *modelServer) Left() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps)
}

func (m *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	turn := r.Method == http.MethodPost && m.d.turn(body)
	var st Step
	m.mu.Lock()
	m.n++
	n := m.n
	if turn {
		last := lastMessage(body)
		st = m.take(last)
		if st.Tool != nil && st.Tool.InputFrom != nil {
			tc := *st.Tool
			tc.Input, tc.InputFrom = tc.InputFrom(last), nil
			st.Tool = &tc
		}
	}
	m.reqs = append(m.reqs, Request{Path: r.URL.Path, Turn: turn, Body: body})
	m.notify()
	m.mu.Unlock()
	if !turn {
		if !m.d.route(w, r, body) {
			http.NotFound(w, r)
		}
		return
	}
	f, _ := w.(http.Flusher)
	if st.Hold {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f.Flush()
		m.mu.Lock()
		m.holding++
		m.notify()
		m.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Minute):
		}
		m.mu.Lock()
		m.holding--
		m.notify()
		m.mu.Unlock()
		return
	}
	if st.Gate != nil {
		select {
		case <-r.Context().Done():
			return
		case <-st.Gate:
		}
	}
	if st.Delay > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(st.Delay):
		}
	}
	m.d.reply(w, f, body, st, n)
}

// sse writes one server-sent event.
func sse(w io.Writer, event string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
}

// hasTools reports whether a request body offers tools.
func hasTools(body []byte) bool {
	var v struct {
		Tools []json.RawMessage `json:"tools"`
	}
	return json.Unmarshal(body, &v) == nil && len(v.Tools) > 0
}

// modelOf returns the request's model.
func modelOf(body []byte) string {
	var v struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &v)
	if v.Model == "" {
		return "mock-model"
	}
	return v.Model
}

// ---- Anthropic Messages API (Claude Code) ----

type messagesAPI struct{}

func (messagesAPI) turn(body []byte) bool {
	return hasTools(body) && bytes.Contains(body, []byte(`"stream":true`))
}

func (messagesAPI) route(w http.ResponseWriter, r *http.Request, body []byte) bool {
	switch {
	case strings.HasSuffix(r.URL.Path, "/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 12})
	case strings.HasSuffix(r.URL.Path, "/v1/messages"):
		// Titles, topic checks and other side requests: one short text.
		st := Step{Text: `{"title": "Live test", "isNewTopic": false}`}
		if bytes.Contains(body, []byte(`"stream":true`)) {
			messagesAPI{}.reply(w, w.(http.Flusher), body, st, 0)
			return true
		}
		writeJSON(w, map[string]any{
			"id": "msg_side", "type": "message", "role": "assistant", "model": modelOf(body),
			"content":     []any{map[string]any{"type": "text", "text": st.Text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
		})
	default:
		return false
	}
	return true
}

func (messagesAPI) reply(w http.ResponseWriter, f http.Flusher, body []byte, st Step, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_live%04d", n), "type": "message", "role": "assistant", "model": modelOf(body),
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1},
	}})
	idx := 0
	block := func(start map[string]any, deltas ...map[string]any) {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": start})
		for _, d := range deltas {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": d})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		f.Flush()
		idx++
	}
	if st.Thinking != "" {
		block(map[string]any{"type": "thinking", "thinking": "", "signature": ""},
			map[string]any{"type": "thinking_delta", "thinking": st.Thinking},
			map[string]any{"type": "signature_delta", "signature": "c2lnbmF0dXJl"})
	}
	if st.Text != "" {
		block(map[string]any{"type": "text", "text": ""}, map[string]any{"type": "text_delta", "text": st.Text})
	}
	stop := "end_turn"
	if st.Tool != nil {
		in, _ := json.Marshal(st.Tool.Input)
		block(map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_live%04d", n), "name": st.Tool.Name, "input": map[string]any{}},
			map[string]any{"type": "input_json_delta", "partial_json": string(in)})
		stop = "tool_use"
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
	f.Flush()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// ---- OpenAI Responses API (Codex) ----

type responsesAPI struct{}

// turn: Codex's thread-title request asks for a JSON schema; turns do not.
func (responsesAPI) turn(body []byte) bool {
	return hasTools(body) && !bytes.Contains(body, []byte(`"json_schema"`))
}

func (responsesAPI) route(w http.ResponseWriter, r *http.Request, body []byte) bool {
	switch {
	case strings.HasSuffix(r.URL.Path, "/responses"):
		responsesAPI{}.reply(w, w.(http.Flusher), body, Step{Text: `{"title":"Live test"}`}, 0)
	case strings.HasSuffix(r.URL.Path, "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	default:
		return false
	}
	return true
}

func (responsesAPI) reply(w http.ResponseWriter, f http.Flusher, body []byte, st Step, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusOK)
	resp := fmt.Sprintf("resp_live%04d", n)
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": resp}})
	out := 0
	item := func(it map[string]any) {
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": out, "item": it})
		if it["type"] == "message" {
			text := it["content"].([]any)[0].(map[string]any)["text"]
			sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta",
				"item_id": it["id"], "output_index": out, "content_index": 0, "delta": text})
		}
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": out, "item": it})
		f.Flush()
		out++
	}
	if st.Text != "" {
		item(map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_live%04d", n),
			"content": []any{map[string]any{"type": "output_text", "text": st.Text, "annotations": []any{}}}})
	}
	if st.Tool != nil {
		args, _ := json.Marshal(st.Tool.Input)
		it := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_live%04d", n),
			"call_id": fmt.Sprintf("call_live%04d", n), "name": st.Tool.Name, "arguments": string(args)}
		if st.Tool.Namespace != "" {
			it["namespace"] = st.Tool.Namespace
		}
		item(it)
	}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": resp,
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15},
	}})
	f.Flush()
}
