package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/hooks/install"
	"github.com/agentbridge/agentbridge/sources/claudecode"
	codexsrc "github.com/agentbridge/agentbridge/sources/codex"
)

// TestHookAnswerPrintsTheDecision: what an answering hook prints for each
// way its wait ends, in the shape Claude Code and Codex read.
func TestHookAnswerPrintsTheDecision(t *testing.T) {
	perm, err := os.ReadFile("../../hooks/testdata/claude-code/permission-request.json")
	if err != nil {
		t.Fatal(err)
	}
	reply := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			if r.Header.Get(api.WaitHeader) != "30" {
				http.Error(w, "no wait asked", http.StatusBadRequest)
				return
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	for _, tt := range []struct {
		name    string
		handler http.HandlerFunc
		payload []byte
		want    string
	}{
		{"allow", reply(200, `{"decision":"allow"}`), perm,
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`},
		{"deny with the reason", reply(200, `{"decision":"deny","message":"not on a Friday"}`), perm,
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"not on a Friday"}}}`},
		{"deny without a reason", reply(200, `{"decision":"deny"}`), perm,
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"Denied from agentbridge"}}}`},
		{"no verdict", reply(200, `{"decision":"none"}`), perm, ""},
		{"a decision the hook does not know", reply(200, `{"decision":"always"}`), perm, ""},
		{"answering off on the bridge", reply(202, ``), perm, ""},
		{"the connection ends without a verdict", reply(200, ``), perm, ""},
		{"a refusal", reply(422, `{"decision":"allow"}`), perm, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fb := newFakeBridge(t, tt.handler)
			env := testEnv(t, "AGENTBRIDGE_ADDR="+fb.addr())
			out, errOut := runHook(t, env, bytes.NewReader(tt.payload), install.Mark, "--answer=30", "claude-code")
			if strings.TrimSpace(out) != tt.want || errOut != "" {
				t.Errorf("printed %q %q, want %q", out, errOut, tt.want)
			}
			if out != "" && !json.Valid([]byte(out)) {
				t.Errorf("not JSON: %q", out)
			}
		})
	}
}

// TestHookAnswerOnlyWaitsForPermission: another event posts as without
// --answer (no wait asked), and a bridge that does not hold the prompt
// within the hook budget (slow, down) leaves it at once, with no verdict.
func TestHookAnswerOnlyWaitsForPermission(t *testing.T) {
	fb := newFakeBridge(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	})
	env := testEnv(t, "AGENTBRIDGE_ADDR="+fb.addr())
	runHook(t, env, strings.NewReader(`{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Bash"}`), install.Mark, "--answer=30", "claude-code")
	if reqs := fb.requests(); len(reqs) != 1 || reqs[0].Header.Get(api.WaitHeader) != "" {
		t.Fatalf("a PreToolUse asked to wait (%d requests)", len(reqs))
	}

	perm, _ := os.ReadFile("../../hooks/testdata/claude-code/permission-request.json")
	// the slow bridge never holds the prompt (no headers) until the hook
	// has left; the hook asks for 600 s, so a hook that waited for it
	// would hang the test rather than pass
	left := make(chan struct{}, 2)
	slow := newFakeBridge(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		left <- struct{}{}
	})
	for _, addr := range []string{slow.addr(), deadAddr(t)} {
		env := testEnv(t, "AGENTBRIDGE_ADDR="+addr)
		out, _ := runHook(t, env, bytes.NewReader(perm), install.Mark, "--answer=600", "claude-code")
		if out != "" {
			t.Errorf("%s: printed %q", addr, out)
		}
	}
	select {
	case <-left: // the hook went away while the bridge still held its request
	case <-time.After(time.Minute):
		t.Error("the slow bridge never saw the hook leave")
	}
}

func TestHooksInstallAnswer(t *testing.T) {
	env := testEnv(t)
	home := envGet(env, "HOME")
	claude, codex, gemini := filepath.Join(home, "claude"), filepath.Join(home, "codex-home"), filepath.Join(home, "g")
	for _, d := range []string{claude, codex, filepath.Join(gemini, ".gemini")} {
		os.MkdirAll(d, 0o700)
	}
	env = append(env, "CLAUDE_CONFIG_DIR="+claude, "CODEX_HOME="+codex, "GEMINI_CLI_HOME="+gemini, "QWEN_HOME="+filepath.Join(home, "q"))
	run := func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := runArgs(t.Context(), "hooks", args, env, strings.NewReader(""), &out, &errb, watchBackoff)
		return out.String(), errb.String(), err
	}
	if _, _, err := run("install", "--allow-build-path", "--answer"); err != nil {
		t.Fatal(err)
	}
	type handler struct {
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	hooksOf := func(file string) map[string][]struct{ Hooks []handler } {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Hooks map[string][]struct{ Hooks []handler }
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Hooks
	}
	for _, tt := range []struct {
		file, source string
		wait         int
	}{
		{filepath.Join(claude, "settings.json"), "claude-code", claudecode.HookAnswerWait},
		{filepath.Join(codex, "hooks.json"), "codex", codexsrc.HookAnswerWait},
	} {
		hs := hooksOf(tt.file)
		perm := hs["PermissionRequest"][0].Hooks[0]
		if !strings.HasSuffix(perm.Command, " hook "+install.Mark+" --answer="+strconv.Itoa(tt.wait)+" "+tt.source) || perm.Timeout <= tt.wait {
			t.Errorf("%s: PermissionRequest handler %+v", tt.source, perm)
		}
		if pre := hs["PreToolUse"][0].Hooks[0]; strings.Contains(pre.Command, "--answer") {
			t.Errorf("%s: PreToolUse waits too: %+v", tt.source, pre)
		}
	}
	for ev, groups := range hooksOf(filepath.Join(gemini, ".gemini", "settings.json")) {
		if strings.Contains(groups[0].Hooks[0].Command, "--answer") {
			t.Errorf("gemini's %s hook answers", ev)
		}
	}
	out, _, _ := run("status", "--harness", "claude-code")
	if !strings.Contains(out, "installed (11 events)") || !strings.Contains(out, "answering: the permission hook waits up to "+strconv.Itoa(claudecode.HookAnswerWait)+" s") {
		t.Errorf("status: %s", out)
	}
	// installing without --answer makes the hook plain again
	if _, _, err := run("install", "--allow-build-path", "--harness", "claude-code"); err != nil {
		t.Fatal(err)
	}
	if perm := hooksOf(filepath.Join(claude, "settings.json"))["PermissionRequest"][0].Hooks[0]; strings.Contains(perm.Command, "--answer") || perm.Timeout != install.Timeout {
		t.Errorf("after a plain install: %+v", perm)
	}
	if _, _, err := run("install", "--allow-build-path", "--answer-wait", "10"); err == nil {
		t.Error("--answer-wait without --answer was taken")
	}
	out, _, _ = run("uninstall")
	if _, err := os.Stat(filepath.Join(codex, "hooks.json")); err == nil {
		t.Errorf("uninstall left the answering hook:\n%s", out)
	}
}
