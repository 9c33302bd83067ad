package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden is what a fixture decodes to: a signal, or a refusal.
type golden struct {
	Event     string `json:"event,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Key       string `json:"key,omitempty"`
	ToolID    string `json:"toolId,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Code      string `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
}

// TestGolden decodes every fixture of every source and compares the
// signal, or the refusal, with its golden file.
func TestGolden(t *testing.T) {
	for _, source := range Sources() {
		files, _ := filepath.Glob(filepath.Join("testdata", source, "*.json"))
		if len(files) == 0 {
			t.Fatalf("%s: no fixtures", source)
		}
		for _, f := range files {
			t.Run(source+"/"+filepath.Base(f), func(t *testing.T) {
				body, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var got golden
				sig, err := Decode(source, body)
				if err != nil {
					var he *Error
					if !errors.As(err, &he) {
						t.Fatalf("untyped error %v", err)
					}
					got = golden{Code: he.Code, Message: he.Message}
				} else {
					h := sig.Hook
					got = golden{Event: sig.Event, SessionID: sig.SessionID, Kind: h.Kind.String(), Key: h.Key, ToolID: h.ToolID, Reason: h.Reason}
				}
				sourcestest.Golden(t, strings.TrimSuffix(f, ".json")+".golden", got, *update)
			})
		}
	}
}

func TestReason(t *testing.T) {
	tests := []struct {
		tool, input, want string
	}{
		{"Bash", `{"command":"git push"}`, "Approve Bash: git push"},
		{"Edit", `{"file_path":"/home/u/repo/main.go"}`, "Approve Edit: …/main.go"},
		{"Bash", `{"command":"export TOKEN=ghp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, ""}, // checked below: redacted
		{"Bash", `{"command":["bash","-lc","make test"]}`, "Approve Bash: make test"},
		{"Bash", `{"command":"line one\nline two"}`, "Approve Bash: line one line two"},
		{"", `{}`, "Approve a tool"},
		{"Read", `"not an object"`, "Approve Read"},
		{"Bash", `{"command":"` + strings.Repeat("x", 5000) + `"}`, ""},
	}
	for _, tt := range tests {
		got := reason(tt.tool, json.RawMessage(tt.input))
		if tt.want != "" && got != tt.want {
			t.Errorf("reason(%s, %s) = %q, want %q", tt.tool, tt.input, got, tt.want)
		}
		if strings.Contains(got, "ghp_AAAA") || strings.Contains(got, "/home/") {
			t.Errorf("reason leaks: %q", got)
		}
		if n := len([]rune(got)); n > validate.MaxWaitingFor {
			t.Errorf("reason has %d characters", n)
		}
	}
}

// TestKeyMatchesAcrossHooks: the hooks of one call name the same prompt,
// even when the PermissionRequest's input carries more (Codex's
// description), and two different calls do not.
func TestKeyMatchesAcrossHooks(t *testing.T) {
	for _, source := range []string{"claude-code", "codex", "qwen"} { // Gemini CLI names no prompt but by notification
		sig := func(name string) Signal {
			b, err := os.ReadFile(filepath.Join("testdata", source, name))
			if err != nil {
				t.Fatal(err)
			}
			s, err := Decode(source, b)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		pre, ask, post := sig("pre-tool-use.json"), sig("permission-request.json"), sig("post-tool-use.json")
		if pre.Hook.Key == "" || pre.Hook.Key != ask.Hook.Key || ask.Hook.Key != post.Hook.Key {
			t.Errorf("%s: keys differ: %q %q %q", source, pre.Hook.Key, ask.Hook.Key, post.Hook.Key)
		}
		if !validate.ValidID(ask.Hook.Key) {
			t.Errorf("%s: key %q is not an identity value", source, ask.Hook.Key)
		}
	}
	if key("Bash", json.RawMessage(`{"command":"a"}`)) == key("Bash", json.RawMessage(`{"command":"b"}`)) {
		t.Error("two commands share a key")
	}
}

func TestDecodeRefusals(t *testing.T) {
	if _, err := Decode("pi", []byte(`{}`)); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("unknown source: %v", err)
	}
	big := append([]byte(`{"hook_event_name":"Stop","session_id":"s","x":"`), bytes.Repeat([]byte("a"), MaxPayload)...)
	big = append(big, `"}`...)
	var he *Error
	if _, err := Decode("codex", big); !errors.As(err, &he) || he.Code != CodeTooLarge {
		t.Errorf("oversized: %v", err)
	}
	for _, body := range []string{``, `null`, `{`, `{"hook_event_name":"Stop","session_id":"../../etc"}`, `{"hook_event_name":5}`} {
		if _, err := Decode("claude-code", []byte(body)); !errors.As(err, &he) {
			t.Errorf("%q: %v", body, err)
		}
	}
}

func TestEvents(t *testing.T) {
	if got := Events("codex"); len(got) == 0 || got[0] != "Interrupt" {
		t.Errorf("codex events %v", got)
	}
	if Events("pi") != nil {
		t.Error("pi has hook events")
	}
}

func FuzzDecode(f *testing.F) {
	for _, source := range Sources() {
		files, _ := filepath.Glob(filepath.Join("testdata", source, "*.json"))
		for _, file := range files {
			b, _ := os.ReadFile(file)
			f.Add(source, b)
		}
	}
	f.Fuzz(func(t *testing.T, source string, body []byte) {
		sig, err := Decode(source, body)
		if err != nil {
			var he *Error
			if !errors.Is(err, ErrUnknownSource) && !errors.As(err, &he) {
				t.Fatalf("untyped error %v", err)
			}
			if he != nil && (strings.Contains(he.Message, "/") || len(he.Message) > 512) {
				t.Fatalf("message %q", he.Message)
			}
			return
		}
		if !validate.ValidID(sig.SessionID) {
			t.Fatalf("session id %q", sig.SessionID)
		}
		if sig.Hook.Key != "" && !validate.ValidID(sig.Hook.Key) {
			t.Fatalf("key %q", sig.Hook.Key)
		}
		if r := sig.Hook.Reason; len([]rune(r)) > validate.MaxWaitingFor || validate.Label(r) != r && validate.Title(r) != r {
			t.Fatalf("reason %q is not display text", r)
		}
	})
}

// TestLivePayloads folds the payloads the real CLIs sent for one approved
// command (captured by the live suite) through the fold, dated as they
// ran: the PermissionRequest waits with a reason naming the command, its
// key matches the PreToolUse and PostToolUse of the same call (Codex drops
// the description from PreToolUse), and the answer ends the wait. Claude
// Code's permission Notification runs some seconds into the dialog; posted
// after the answer, it must not bring the wait back.
func TestLivePayloads(t *testing.T) {
	type step struct {
		event string
		at    int64
	}
	claude := []step{{"session-start", 10}, {"user-prompt-submit", 11}, {"pre-tool-use", 12}, {"permission-request", 13},
		{"notification", 14}, {"post-tool-use", 20}, {"notification", 15}, {"stop", 21}}
	codex := []step{{"session-start", 10}, {"user-prompt-submit", 11}, {"pre-tool-use", 12}, {"permission-request", 13},
		{"post-tool-use", 20}, {"stop", 21}}
	interrupted := []step{{"session-start", 10}, {"user-prompt-submit", 11}, {"pre-tool-use", 12}, {"permission-request", 13},
		{"interrupt", 20}}
	tests := []struct {
		source, version string
		steps           []step
		reason          string
	}{
		{"claude-code", "2.1.332", claude, "Approve Bash: touch …/marker"},
		{"claude-code", "2.1.242", claude, "Approve Bash: touch …/marker"},
		{"codex", "0.171.0", codex, "Approve Bash: touch '…/outside-marker'"},
		{"codex", "0.165.0", codex, "Approve Bash: touch '…/outside-marker'"},
		{"codex", "0.171.0", interrupted, "Approve Bash: touch '…/outside-marker'"},
		{"codex", "0.165.0", interrupted, "Approve Bash: touch '…/outside-marker'"},
	}
	for _, tt := range tests {
		t.Run(tt.source+"/"+tt.version+"/"+tt.steps[len(tt.steps)-1].event, func(t *testing.T) {
			s := fold.NewSession("s", tt.source)
			s.Apply(agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 1})
			answered := false
			for _, st := range tt.steps {
				body, err := os.ReadFile(filepath.Join("testdata", tt.source, "live-"+tt.version+"-"+st.event+".json"))
				if err != nil {
					t.Fatal(err)
				}
				sig, err := Decode(tt.source, body)
				if err != nil {
					t.Fatalf("%s: %v", st.event, err)
				}
				sig.Hook.At = st.at
				s.Hook(sig.Hook)
				snap := s.Snapshot()
				switch {
				case st.event == "permission-request" || st.event == "notification" && !answered:
					if snap.Status != agentbridge.StatusWaiting || snap.WaitingFor != tt.reason {
						t.Fatalf("after %s: %s %q, want waiting %q", st.event, snap.Status, snap.WaitingFor, tt.reason)
					}
				case st.at >= 20:
					answered = true
					fallthrough
				case answered:
					if snap.Status != agentbridge.StatusRunning || snap.WaitingFor != "" {
						t.Fatalf("after %s: %s %q, want running", st.event, snap.Status, snap.WaitingFor)
					}
				}
			}
			if !answered {
				t.Fatal("no answer in the steps")
			}
		})
	}
}
