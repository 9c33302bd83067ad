package live

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The pinned Gemini-family CLIs: Gemini CLI speaks the Gemini API, Qwen
// Code (a Gemini CLI fork) OpenAI Chat Completions.
var (
	geminiCLI = agentCLI{Agent: "gemini-cli", Pkg: "@google/gemini-cli", Version: "0.61.0", Bin: "gemini"}
	qwenCLI   = agentCLI{Agent: "qwen-code", Pkg: "@qwen-code/qwen-code", Version: "0.24.4", Bin: "qwen"}
)

// ---- OpenAI Chat Completions (Qwen Code) ----

type chatAPI struct{}

// turn: the agent's turns offer tools; Qwen's side requests (the next
// speaker check, titles) do not.
func (chatAPI) turn(body []byte) bool { return hasTools(body) }

func (chatAPI) route(w http.ResponseWriter, r *http.Request, body []byte) bool {
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		chatAPI{}.reply(w, w.(http.Flusher), body, Step{Text: `{"next_speaker":"user","reasoning":"the model answered"}`}, 0)
	case strings.HasSuffix(r.URL.Path, "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "mock-model", "object": "model"}}})
	default:
		return false
	}
	return true
}

func (chatAPI) reply(w http.ResponseWriter, f http.Flusher, body []byte, st Step, n int) {
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	msg := map[string]any{"role": "assistant"}
	finish := "stop"
	if st.Text != "" {
		msg["content"] = st.Text
	}
	if st.Tool != nil {
		args, _ := json.Marshal(st.Tool.Input)
		msg["tool_calls"] = []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_live%04d", n), "type": "function",
			"function": map[string]any{"name": st.Tool.Name, "arguments": string(args)}}}
		finish = "tool_calls"
	}
	if !req.Stream {
		writeJSON(w, map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "model": modelOf(body),
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(v map[string]any) {
		v["id"], v["object"], v["model"] = fmt.Sprintf("chatcmpl-%d", n), "chat.completion.chunk", modelOf(body)
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		f.Flush()
	}
	chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": msg}}})
	chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
	f.Flush()
}

// ---- Gemini API (Gemini CLI) ----

type geminiAPI struct{}

// turn: the agent's turns are streamGenerateContent calls with tools; the
// router's classification is a plain generateContent with a JSON schema.
func (geminiAPI) turn(body []byte) bool {
	return hasTools(body) && !strings.Contains(string(body), `"responseJsonSchema"`) && !strings.Contains(string(body), `"responseSchema"`)
}

func (geminiAPI) route(w http.ResponseWriter, r *http.Request, body []byte) bool {
	switch {
	case strings.Contains(r.URL.Path, ":generateContent"), strings.Contains(r.URL.Path, ":streamGenerateContent"):
		// The model router and other side requests: a JSON answer that
		// fills the usual schemas.
		text := `{"reasoning":"simple","model_choice":"flash","complexity_reasoning":"simple","complexity_score":1,"next_speaker":"user"}`
		if strings.Contains(r.URL.Path, ":stream") {
			geminiAPI{}.reply(w, w.(http.Flusher), body, Step{Text: text}, 0)
			return true
		}
		writeJSON(w, map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
			"parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP"}},
			"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}})
	case strings.Contains(r.URL.Path, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 10})
	case strings.HasSuffix(r.URL.Path, "/models"):
		writeJSON(w, map[string]any{"models": []any{}})
	default:
		return false
	}
	return true
}

func (geminiAPI) reply(w http.ResponseWriter, f http.Flusher, body []byte, st Step, n int) {
	var parts []any
	if st.Text != "" {
		parts = append(parts, map[string]any{"text": st.Text})
	}
	if st.Tool != nil {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": st.Tool.Name, "args": st.Tool.Input}})
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	b, _ := json.Marshal(map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-live-model",
	})
	fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	f.Flush()
}

// familyRig runs one Gemini-family CLI in a throwaway home against the
// scripted model and a bridge watching that home.
type familyRig struct {
	t      *testing.T
	bin    string
	home   string
	cwd    string
	model  *modelServer
	bridge *bridge
	env    []string
}

func newFamilyRig(t *testing.T, c agentCLI, d dialect) *familyRig {
	t.Helper()
	bin := install(t, c)
	r := &familyRig{t: t, bin: bin, home: t.TempDir(), model: newModelServer(t, d)}
	r.cwd = filepath.Join(r.home, "proj")
	if err := os.MkdirAll(r.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	keepHome(t, r.home)
	r.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "TERM=xterm-256color", "NO_COLOR=1"}
	r.bridge = startBridge(t, r.home)
	return r
}

func (r *familyRig) settings(dir string, v map[string]any) {
	r.t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// headless runs the CLI with a prompt and returns what it printed.
func (r *familyRig) headless(env []string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = r.cwd
	cmd.Env = append(append([]string{}, r.env...), env...)
	cmd.WaitDelay = 5 * time.Second
	tracked(r.t, cmd)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		r.t.Fatalf("%s did not finish: %s\nmodel requests:\n%s", filepath.Base(r.bin), out, r.model.Log())
	}
	if err != nil {
		r.t.Fatalf("%s %v: %v\n%s\nmodel requests:\n%s", filepath.Base(r.bin), args, err, out, r.model.Log())
	}
	return string(out)
}

// promptAnswered: the CLI answers one prompt headless; the bridge shows
// the session going running → done, completed, with the model and cwd.
func (r *familyRig) promptAnswered(source, wantModel string, env []string, args ...string) {
	r.t.Helper()
	r.model.Script(Step{Text: "Live answer."})
	out := r.headless(env, args...)
	if !strings.Contains(out, "Live answer.") {
		r.t.Errorf("the CLI printed %q", out)
	}
	s := r.bridge.AwaitOne("the answered session", source, 20*time.Second, func(s snapshot) bool {
		return s.Status == "done" && s.LastTurn == "completed"
	})
	r.t.Logf("%s: %s", source, s)
	hist := r.bridge.History(source, s.ID)
	if !strings.Contains(strings.Join(hist, " "), "running") {
		r.t.Errorf("the session never showed running: %v", hist)
	}
	if s.Cwd != r.cwd {
		r.t.Errorf("cwd %q, want %q", s.Cwd, r.cwd)
	}
	if !strings.Contains(s.Model, wantModel) {
		r.t.Errorf("model %q, want %q", s.Model, wantModel)
	}
}

func TestQwenCode(t *testing.T) {
	enabled(t)
	scenario(t, qwenCLI.Label(), "prompt answered (headless)", func(t *testing.T) {
		r := newFamilyRig(t, qwenCLI, chatAPI{})
		r.settings(filepath.Join(r.home, ".qwen"), map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}},
			"memory":   map[string]any{"enableManagedAutoMemory": false},
			"tools":    map[string]any{"approvalMode": "default"},
			"privacy":  map[string]any{"usageStatisticsEnabled": false},
		})
		r.promptAnswered("qwen", "mock-model", []string{
			"OPENAI_BASE_URL=" + r.model.URL + "/v1", "OPENAI_API_KEY=dummy", "OPENAI_MODEL=mock-model",
		}, "-p", "answer live")
	})
}

// Gemini CLI's scenarios are in gemini_test.go.
