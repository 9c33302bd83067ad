package qwen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

func TestArgvMode(t *testing.T) {
	for _, c := range []struct{ argv, want string }{
		{"node\x00/usr/lib/qwen/cli.js\x00", ""},
		{"node\x00cli.js\x00--yolo\x00", ModeYOLO},
		{"node\x00cli.js\x00-y\x00", ModeYOLO},
		{"node\x00cli.js\x00--approval-mode\x00auto-edit\x00", ModeAutoEdit},
		{"node\x00cli.js\x00--approval-mode=default\x00", ModeDefault},
		{"node\x00cli.js\x00--approval-mode\x00bogus\x00", ""},
		{"node\x00cli.js\x00--approval-mode\x00", ""},
		{"node\x00cli.js\x00--resume\x00x\x00--approval-mode=plan\x00", ModePlan},
		{"", ""},
	} {
		if got := argvMode([]byte(c.argv)); got != c.want {
			t.Errorf("argvMode(%q) = %q, want %q", strings.ReplaceAll(c.argv, "\x00", " "), got, c.want)
		}
	}
}

func TestSettingsMode(t *testing.T) {
	for _, c := range []struct{ settings, want string }{
		{`{"tools":{"approvalMode":"default"}}`, ModeDefault},
		{"{\n  // mine\n  \"tools\": { \"approvalMode\" : \"yolo\" }\n}", ModeYOLO},
		{`{"tools":{"approvalMode":"sometimes"}}`, ""},
		{`{"security":{"auth":{"selectedType":"openai"}}}`, ""},
		{`not json`, ""},
	} {
		if got := settingsMode([]byte(c.settings)); got != c.want {
			t.Errorf("settingsMode(%s) = %q, want %q", c.settings, got, c.want)
		}
	}
}

func TestAsks(t *testing.T) {
	for _, c := range []struct {
		tool, mode string
		want       bool
	}{
		{"run_shell_command", ModeDefault, true},
		{"write_file", ModeDefault, true},
		{"agent", ModePlan, true},
		{"read_file", ModeDefault, false},
		{"run_shell_command", ModeAutoEdit, true},
		{"edit", ModeAutoEdit, false},
		{"run_shell_command", ModeYOLO, false},
		{"run_shell_command", ModeAuto, false}, // a model decides: not known
		{"run_shell_command", "", false},
	} {
		if got := asks(c.tool, c.mode); got != c.want {
			t.Errorf("asks(%s, %q) = %v, want %v", c.tool, c.mode, got, c.want)
		}
	}
}

// The approval mode of the user's settings decides whether a shell call
// waits: default asks, YOLO runs it at once.
func TestSettingsDecideWaiting(t *testing.T) {
	for mode, want := range map[string]agentbridge.Status{ModeDefault: agentbridge.StatusWaiting, ModeYOLO: agentbridge.StatusRunning, "": agentbridge.StatusRunning} {
		t.Run("mode="+mode, func(t *testing.T) {
			home := t.TempDir()
			if mode != "" {
				if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"tools":{"approvalMode":"`+mode+`"}}`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			const id = "33333333-4319-42fc-ae72-923eb867e18f"
			chat := filepath.Join(home, "projects", "-work-proj", "chats", id+".jsonl")
			h := run(t, home)
			sourcestest.Append(t, chat, `{"uuid":"u1","sessionId":"`+id+`","timestamp":"2026-12-01T10:00:00Z","type":"user","message":{"parts":[{"text":"touch it"}]}}`+"\n"+
				`{"uuid":"a1","sessionId":"`+id+`","timestamp":"2026-12-01T10:00:01Z","type":"assistant","message":{"parts":[{"functionCall":{"id":"call_1","name":"run_shell_command","args":{"command":"touch /work/proj/marker"}}}]}}`+"\n"+
				`{"uuid":"a2","sessionId":"`+id+`","timestamp":"2026-12-01T10:00:02Z","type":"assistant","model":"m2","message":{"parts":[{"functionCall":{"id":"call_2","name":"read_file","args":{"file_path":"/work/proj/x"}}}]}}`+"\n")
			// The second call's record names a model: once it shows, both
			// calls are mapped.
			h.WaitFor(t, "both calls mapped", func(h *sourcestest.Hub) bool { s, _ := h.Snapshot(id); return s.Model == "m2" })
			s, _ := h.Snapshot(id)
			if s.Status != want || (want == agentbridge.StatusWaiting) != (s.WaitingFor == "Approve run_shell_command: touch …/marker") {
				t.Errorf("status %s, waitingFor %q; want %s", s.Status, s.WaitingFor, want)
			}
		})
	}
}

// --yolo on the TUI's command line (the runtime file's pid) wins over the
// settings: the shell call runs without a wait.
func TestArgvOverridesSettings(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"tools":{"approvalMode":"default"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	agent, _ := startAgent(t, "sh", "-c", "sleep 60; :", "qwen", "--yolo")
	const id = "44444444-4319-42fc-ae72-923eb867e18f"
	chats := filepath.Join(home, "projects", "-work-proj", "chats")
	sourcestest.Append(t, filepath.Join(chats, id+".runtime.json"), fmt.Sprintf(`{"pid": %d, "session_id": %q, "started_at": %.3f}`, agent.Process.Pid, id, float64(time.Now().UnixMilli())/1000))
	h := run(t, home)
	sourcestest.Append(t, filepath.Join(chats, id+".jsonl"), `{"uuid":"u1","sessionId":"`+id+`","timestamp":"2026-12-01T10:00:00Z","type":"user","message":{"parts":[{"text":"touch it"}]}}`+"\n")
	h.WaitFor(t, "the process bound", func(h *sourcestest.Hub) bool { s, _ := h.Snapshot(id); return s.PID == agent.Process.Pid })
	sourcestest.Append(t, filepath.Join(chats, id+".jsonl"), `{"uuid":"a1","sessionId":"`+id+`","timestamp":"2026-12-01T10:00:01Z","type":"assistant","model":"m2","message":{"parts":[{"functionCall":{"id":"call_1","name":"run_shell_command","args":{"command":"touch x"}}}]}}`+"\n")
	h.WaitFor(t, "the call mapped", func(h *sourcestest.Hub) bool { s, _ := h.Snapshot(id); return s.Model == "m2" })
	if s, _ := h.Snapshot(id); s.Status != agentbridge.StatusRunning || s.WaitingFor != "" {
		t.Errorf("--yolo: %s %q", s.Status, s.WaitingFor)
	}
}
