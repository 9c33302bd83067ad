package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// opencodeBinary finds the real CLI: $OPENCODE_BIN, which the live suite
// (make live: e2e/live TestOpencodeSourceRealCLI, which fails unless they
// all run and pass) sets to the pinned opencode-ai it installs. Without it
// these tests skip: a real CLI under load is no unit test.
func opencodeBinary() string {
	for _, p := range []string{os.Getenv("OPENCODE_BIN")} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// mockModel is a scripted OpenAI Chat Completions server: the agent's
// first step calls bash, the next calls the task tool (a subagent), then
// it answers; the subagent answers at once; requests without tools (the
// title) get a stock text.
func mockModel(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback listener: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Tools  []json.RawMessage `json:"tools"`
			Stream bool              `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"data":[{"id":"mock-model","object":"model"}]}`)
			return
		}
		tools, sub := 0, false
		for _, m := range body.Messages {
			if m.Role == "tool" {
				tools++
			}
			if m.Role == "user" && strings.Contains(string(m.Content), "say hi") {
				sub = true
			}
		}
		var delta string
		finish := "stop"
		switch {
		case len(body.Tools) == 0:
			delta = `{"role":"assistant","content":"Marker job"}`
		case sub:
			delta = `{"role":"assistant","content":"sub done"}`
		case tools == 0:
			delta = `{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"echo hi > marker.txt\",\"description\":\"write marker\"}"}}]}`
			finish = "tool_calls"
		case tools == 1:
			delta = `{"role":"assistant","tool_calls":[{"index":0,"id":"call_2","type":"function","function":{"name":"task","arguments":"{\"description\":\"sub job\",\"prompt\":\"say hi\",\"subagent_type\":\"general\"}"}}]}`
			finish = "tool_calls"
		default:
			delta = `{"role":"assistant","content":"all done"}`
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"mock-model\",\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", delta)
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"mock-model\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n\n", finish)
		fmt.Fprint(w, "data: [DONE]\n\n")
	})}
	go srv.Serve(ln) //nolint:errcheck // closed below
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/v1"
}

// runCLI runs the real opencode CLI once (skipping the test when it is
// not installed) offline against the scripted model, with the source
// following its data directory; it returns the source's hub and the
// project directory the CLI ran in.
func runCLI(t *testing.T, permission string, args ...string) (*sourcestest.Hub, string) {
	t.Helper()
	bin := opencodeBinary()
	if bin == "" {
		t.Skip("set OPENCODE_BIN to a real opencode CLI (make live does) to run it")
	}
	if testing.Short() {
		t.Skip("runs the real CLI")
	}
	base := mockModel(t)
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	cfgDir := filepath.Join(home, ".config", "opencode")
	data := filepath.Join(home, ".local", "share", "opencode")
	for _, d := range []string{proj, cfgDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`{"provider":{"mock":{"npm":"@ai-sdk/openai-compatible","options":{"baseURL":%q,"apiKey":"dummy"},"models":{"mock-model":{"tool_call":true}}}},"model":"mock/mock-model","small_model":"mock/mock-model","autoupdate":false,"share":"disabled","permission":{"bash":%q}}`, base, permission)
	if err := os.WriteFile(filepath.Join(cfgDir, "opencode.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// The machine's own processes: the run's opencode is bound and ends.
	h := sourcestest.Start(t, New(sources.Options{Home: data}), nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = proj
	cmd.Stdin = nil
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb",
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1"}
	out, err := cmd.CombinedOutput()
	if err != nil && ctx.Err() != nil {
		t.Fatalf("opencode %v: %v\n%s", args, err, out)
	}
	if strings.Contains(string(out), "database is locked") {
		// The source must never hold a lock opencode waits for.
		t.Fatalf("opencode failed on a lock while the source followed its database:\n%s", out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("opencode %v (%v) printed:\n%s", args, err, out)
			if b, err := os.ReadFile(filepath.Join(data, "log", "opencode.log")); err == nil {
				t.Logf("its log:\n%s", b)
			}
		}
	})
	return h, proj
}

// TestRealCLI: a prompt that calls bash and then a subagent, and ends,
// shows running, the tool, the subagent under its root (never a second
// root), and its turn completed; the run's process has exited, so the
// session has ended; the idle source then makes no query.
func TestRealCLI(t *testing.T) {
	h, proj := runCLI(t, "allow", "run", "--auto", "write a marker")
	var root string
	h.WaitFor(t, "a root session's turn completed with its subagent, and ended with its process", func(h *sourcestest.Hub) bool {
		for _, s := range h.Snapshots() {
			if s.LastTurn == agentbridge.LastTurnCompleted && len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentCompleted &&
				h.Ended(s.ID) != nil {
				root = s.ID
				return true
			}
		}
		return false
	})
	if n := len(h.Snapshots()); n != 1 {
		t.Errorf("%d sessions listed; want the root only: %+v", n, h.Snapshots())
	}
	var sawRunning, sawBash bool
	for _, tr := range h.Transitions() {
		sawRunning = sawRunning || (tr.Session == root && tr.Status == agentbridge.StatusRunning)
	}
	for _, c := range h.Calls() {
		sawBash = sawBash || (c.SessionID == root && c.Event.Kind == agentbridge.KindToolStarted && c.Event.Name == "bash")
	}
	if !sawRunning || !sawBash {
		t.Errorf("running seen: %v, bash tool seen: %v; want both", sawRunning, sawBash)
	}
	if s, _ := h.Shown(root); s.Cwd != proj || s.Model != "mock-model" || s.LastTurn != agentbridge.LastTurnCompleted {
		t.Errorf("snapshot = %+v; want cwd %s, the model, the turn completed", s, proj)
	}
	quiet(t)
}

// TestRealCLIRejected: opencode run without --auto rejects a call that
// needs permission and stops the turn; the turn ends interrupted rather
// than running forever, and the session ends with the run's process.
func TestRealCLIRejected(t *testing.T) {
	h, _ := runCLI(t, "ask", "run", "write a marker")
	h.WaitFor(t, "the turn interrupted, the session ended", func(h *sourcestest.Hub) bool {
		for _, s := range h.Snapshots() {
			if s.Status == agentbridge.StatusIdle && s.LastTurn == agentbridge.LastTurnInterrupted && h.Ended(s.ID) != nil {
				return true
			}
		}
		return false
	})
}
