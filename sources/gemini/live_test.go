package gemini

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// run starts the source on home with a fake hub until the test ends and
// returns the hub and the channel that switches harnesses. The source
// sees a fake /proc in which Gemini CLI runs in /work/myproj (the project
// of chatHome) and Antigravity CLI runs too: the sessions are followed as
// they run.
func run(t *testing.T, home string, enabled ...string) (*sourcestest.Hub, chan<- []string) {
	t.Helper()
	procs := proctest.Running(t, "/usr/bin/gemini", "/work/myproj")
	procs.Add(proctest.Proc{PID: proctest.RunningPID + 100, PPID: 1, Exe: "/usr/bin/agy", Cwd: "/work/agy", Started: proctest.Boot})
	return runOn(t, home, procs, enabled...)
}

// runOn is run with the processes procs (nil: the machine's).
func runOn(t *testing.T, home string, procs sources.Processes, enabled ...string) (*sourcestest.Hub, chan<- []string) {
	t.Helper()
	changes := make(chan []string)
	return sourcestest.RunStart(t, New(sources.Options{Home: home, Processes: procs}), hub.Start{Enabled: enabled, Changes: changes}), changes
}

const sid = "11111111-2222-4333-8444-555555555555"

// chatHome makes a Gemini home with one project whose .project_root is
// /work/myproj, and returns it, the project directory and the path of the
// chat of session sid.
func chatHome(t *testing.T) (home, project, chat string) {
	t.Helper()
	home = t.TempDir()
	project = filepath.Join(home, "tmp", "myproj")
	if err := os.MkdirAll(filepath.Join(project, "chats"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".project_root"), []byte("/work/myproj\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return home, project, filepath.Join(project, "chats", "session-2026-12-01T10-00-11111111.jsonl")
}

// A Gemini CLI chat written live, a record at a time and with lines cut
// in two: prompt → running (with its cwd from .project_root) → a tool →
// done; a rewind takes the second turn back; a subagent's chat shows
// under its parent; the chat's removal ends the session.
func TestGeminiChatLive(t *testing.T) {
	home, project, chat := chatHome(t)
	h, _ := run(t, home, HarnessGemini, HarnessAntigravity)

	sourcestest.Append(t, chat, `{"sessionId":"`+sid+`","projectHash":"x","startTime":"2026-12-01T10:00:00.000Z","lastUpdated":"2026-12-01T10:00:00.000Z","kind":"main"}`+"\n")
	h.WaitFor(t, "the session", kittest.Status(sid, agentbridge.StatusIdle))
	if s, _ := h.Shown(sid); s.Cwd != "/work/myproj" || s.Harness != HarnessGemini {
		t.Errorf("cwd %q harness %q", s.Cwd, s.Harness)
	}
	prompt := `{"id":"u1","timestamp":"2026-12-01T10:00:01.000Z","type":"user","content":[{"text":"list the files"}]}` + "\n"
	sourcestest.Append(t, chat, prompt[:30])
	sourcestest.Append(t, chat, prompt[30:])
	h.WaitFor(t, "running", kittest.Status(sid, agentbridge.StatusRunning))
	sourcestest.Append(t, chat, `{"id":"g1","timestamp":"2026-12-01T10:00:02.000Z","type":"gemini","content":"","model":"gemini-3-flash"}`+"\n")
	sourcestest.Append(t, chat, `{"id":"g1","timestamp":"2026-12-01T10:00:02.000Z","type":"gemini","content":"","model":"gemini-3-flash","toolCalls":[{"id":"ls_1","name":"list_directory","displayName":"ReadFolder","status":"success"}]}`+"\n")
	sourcestest.Append(t, chat, `{"id":"u2","timestamp":"2026-12-01T10:00:03.000Z","type":"user","content":[{"functionResponse":{"id":"ls_1","name":"list_directory","response":{}}}]}`+"\n")
	sourcestest.Append(t, chat, `{"id":"g2","timestamp":"2026-12-01T10:00:04.000Z","type":"gemini","content":"Here they are.","model":"gemini-3-flash"}`+"\n")
	h.WaitFor(t, "done", kittest.Status(sid, sourcestest.StatusDone))
	s, _ := h.Shown(sid)
	if s.Title != "list the files" || s.Model != "gemini-3-flash" || s.LastTurn != agentbridge.LastTurnCompleted {
		t.Errorf("after the turn: %+v", s)
	}

	// A second turn, then the user rewinds it: the session is done again
	// with the first turn's end.
	sourcestest.Append(t, chat, `{"id":"u3","timestamp":"2026-12-01T10:01:00.000Z","type":"user","content":[{"text":"and again"}]}`+"\n")
	h.WaitFor(t, "running again", kittest.Status(sid, agentbridge.StatusRunning))
	sourcestest.Append(t, chat, `{"$rewindTo":"u3"}`+"\n")
	h.WaitFor(t, "the rewind", kittest.Status(sid, sourcestest.StatusDone))
	if s, _ := h.Shown(sid); s.LastTurnEndedAt != time.Date(2026, 12, 1, 10, 0, 4, 0, time.UTC).UnixMilli() {
		t.Errorf("after the rewind lastTurnEndedAt = %d", s.LastTurnEndedAt)
	}

	// A subagent's chat under chats/<parent id>/ is a subagent, never a root.
	sub := filepath.Join(project, "chats", sid, "22222222-2222-4333-8444-555555555555.jsonl")
	sourcestest.Append(t, sub, `{"sessionId":"22222222-2222-4333-8444-555555555555","projectHash":"x","startTime":"2026-12-01T10:02:00.000Z","kind":"subagent"}`+"\n")
	h.WaitFor(t, "the subagent", func(h *sourcestest.Hub) bool {
		s, _ := h.Shown(sid)
		return len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentRunning
	})
	sourcestest.Append(t, sub, `{"id":"su1","timestamp":"2026-12-01T10:02:01.000Z","type":"user","content":[{"text":"read it"}]}`+"\n"+
		`{"id":"sg1","timestamp":"2026-12-01T10:02:02.000Z","type":"gemini","content":"read."}`+"\n")
	h.WaitFor(t, "the subagent done", func(h *sourcestest.Hub) bool {
		s, _ := h.Shown(sid)
		return len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentCompleted
	})
	if len(h.Snapshots()) != 1 {
		t.Errorf("sessions %v, want the parent only", h.Snapshots())
	}

	if err := os.Remove(chat); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the session to leave", func(h *sourcestest.Hub) bool { _, ok := h.Shown(sid); return !ok })
}

// An Antigravity conversation written live; a child conversation named
// by the parent's INVOKE_SUBAGENT is its subagent, and the parent's turn
// ends when the child reports back. Switching the harness off drops its
// sessions; on brings them back.
func TestAntigravityLive(t *testing.T) {
	home := t.TempDir()
	parent, child := "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	tr := func(conv string) string {
		return filepath.Join(home, "antigravity-cli", "brain", conv, ".system_generated", "logs", "transcript.jsonl")
	}
	h, changes := run(t, home, HarnessGemini, HarnessAntigravity)

	sourcestest.Append(t, tr(parent), `{"step_index":0,"source":"USER_EXPLICIT","type":"USER_INPUT","status":"DONE","created_at":"2026-12-01T10:00:00Z","content":"<USER_REQUEST>\nsummarise the notes\n</USER_REQUEST>\n<USER_SETTINGS_CHANGE>\nThe user changed setting `+"`Model Selection`"+` from None to Gemini 3.1 Pro (Low). No need to comment.\n</USER_SETTINGS_CHANGE>"}`+"\n")
	h.WaitFor(t, "running", kittest.Status(parent, agentbridge.StatusRunning))
	sourcestest.Append(t, tr(parent), `{"step_index":3,"source":"MODEL","type":"PLANNER_RESPONSE","status":"DONE","created_at":"2026-12-01T10:00:01Z","tool_calls":[{"name":"invoke_subagent","args":{}}]}`+"\n"+
		fmt.Sprintf(`{"step_index":4,"source":"MODEL","type":"INVOKE_SUBAGENT","status":"DONE","created_at":"2026-12-01T10:00:02Z","content":"Created the following subagents:\n{\n  \"conversationId\":  \"%s\"\n}"}`, child)+"\n"+
		`{"step_index":7,"source":"MODEL","type":"PLANNER_RESPONSE","status":"DONE","created_at":"2026-12-01T10:00:03Z","content":"dispatched"}`+"\n")
	sourcestest.Append(t, tr(child), `{"step_index":0,"source":"USER_EXPLICIT","type":"USER_INPUT","status":"DONE","created_at":"2026-12-01T10:00:02Z","content":"count the files"}`+"\n")
	h.WaitFor(t, "the running subagent", func(h *sourcestest.Hub) bool {
		s, _ := h.Shown(parent)
		return len(s.Subagents) == 1 && s.Subagents[0].ID == child && s.Subagents[0].Status == agentbridge.SubagentRunning
	})
	if s, _ := h.Shown(parent); s.Status != agentbridge.StatusRunning || s.Title != "summarise the notes" || s.Model != "Gemini 3.1 Pro (Low)" {
		t.Errorf("parent while its child runs: %+v", s)
	}
	sourcestest.Append(t, tr(child), `{"step_index":2,"source":"MODEL","type":"PLANNER_RESPONSE","status":"DONE","created_at":"2026-12-01T10:00:09Z","content":"5 files"}`+"\n")
	h.WaitFor(t, "the parent done after its child", kittest.Status(parent, sourcestest.StatusDone))
	if ids := ids(h); !slices.Equal(ids, []string{parent}) {
		t.Errorf("sessions %v, want the parent only", ids)
	}

	changes <- []string{HarnessGemini}
	h.WaitFor(t, "antigravity switched off", func(h *sourcestest.Hub) bool { return len(h.Snapshots()) == 0 })
	changes <- []string{HarnessGemini, HarnessAntigravity}
	h.WaitFor(t, "antigravity back", kittest.Status(parent, sourcestest.StatusDone))
	if ids := ids(h); !slices.Equal(ids, []string{parent}) {
		t.Errorf("after the switch: sessions %v, want the parent only", ids)
	}
}

func ids(h *sourcestest.Hub) []string {
	var out []string
	for _, s := range h.Snapshots() {
		out = append(out, s.ID)
	}
	return out
}

// At start, a child conversation may be read before its parent: it is
// still never reported as a root session, and its end is its parent's.
func TestAntigravityChildBeforeParentAtScan(t *testing.T) {
	home := t.TempDir()
	parent, child := "zzzzzzzz-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002" // the child sorts first
	tr := func(conv string) string {
		return filepath.Join(home, "antigravity-cli", "brain", conv, ".system_generated", "logs", "transcript.jsonl")
	}
	sourcestest.Append(t, tr(child), `{"step_index":0,"source":"USER_EXPLICIT","type":"USER_INPUT","status":"DONE","created_at":"2026-12-01T10:00:02Z","content":"count"}`+"\n"+
		`{"step_index":2,"source":"MODEL","type":"PLANNER_RESPONSE","status":"DONE","created_at":"2026-12-01T10:00:09Z","content":"5 files"}`+"\n")
	sourcestest.Append(t, tr(parent), `{"step_index":0,"source":"USER_EXPLICIT","type":"USER_INPUT","status":"DONE","created_at":"2026-12-01T10:00:00Z","content":"go"}`+"\n"+
		`{"step_index":3,"source":"MODEL","type":"PLANNER_RESPONSE","status":"DONE","created_at":"2026-12-01T10:00:01Z","tool_calls":[{"name":"invoke_subagent","args":{}}]}`+"\n"+
		fmt.Sprintf(`{"step_index":4,"source":"MODEL","type":"INVOKE_SUBAGENT","status":"DONE","created_at":"2026-12-01T10:00:02Z","content":"\"conversationId\": \"%s\""}`, child)+"\n"+
		`{"step_index":7,"source":"MODEL","type":"PLANNER_RESPONSE","status":"DONE","created_at":"2026-12-01T10:00:03Z","content":"dispatched"}`+"\n")
	h, _ := run(t, home, HarnessAntigravity)
	h.WaitFor(t, "the parent done", kittest.Status(parent, sourcestest.StatusDone))
	if ids := ids(h); !slices.Equal(ids, []string{parent}) {
		t.Errorf("sessions %v, want the parent only", ids)
	}
	if s, _ := h.Shown(parent); len(s.Subagents) != 1 || s.Subagents[0].Status != agentbridge.SubagentCompleted {
		t.Errorf("subagents %+v", s.Subagents)
	}
}

// A legacy whole-file chat (Gemini CLI 0.39 and older) is read whole on
// every rewrite; when Gemini CLI migrates it to a .jsonl chat on resume,
// the session is rebuilt from the new file alone, once.
func TestLegacyChatAndItsMigration(t *testing.T) {
	home := t.TempDir()
	chats := filepath.Join(home, "tmp", "0123abcd", "chats")
	fixture, err := os.ReadFile("testdata/chats/legacy-agent-sessions-fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	const id = "session-2026-01-16T18-34-3739ef95"
	legacy := filepath.Join(chats, "session-2026-01-16T18-34-3739ef95.json")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	projectRoot(t, filepath.Dir(chats))
	h, _ := run(t, home, HarnessGemini)
	if err := os.WriteFile(legacy, fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the legacy chat's turn done", kittest.Status(id, sourcestest.StatusDone))
	if s, _ := h.Shown(id); s.Title != "Hello" {
		t.Errorf("legacy snapshot %+v", s)
	}
	// Rewritten in full with a new prompt: running again.
	var doc map[string]any
	if err := json.Unmarshal(fixture, &doc); err != nil {
		t.Fatal(err)
	}
	doc["messages"] = append(doc["messages"].([]any), map[string]any{"id": "u-next", "timestamp": "2026-01-16T18:40:00Z", "type": "user", "content": "again"})
	next, _ := json.MarshalIndent(doc, "", "  ")
	if err := os.WriteFile(legacy, next, 0o644); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the rewrite's new turn", kittest.Status(id, agentbridge.StatusRunning))

	// Migrated on resume: the .jsonl carries the whole history; one session.
	migrated := `{"sessionId":"` + id + `","projectHash":"x","startTime":"2026-01-16T18:34:00.000Z","kind":"main"}` + "\n" +
		`{"id":"u1","timestamp":"2026-01-16T18:34:01Z","type":"user","content":[{"text":"Hello"}]}` + "\n" +
		`{"id":"g1","timestamp":"2026-01-16T18:34:02Z","type":"gemini","content":"Hi!","model":"gemini-2.5-pro"}` + "\n"
	sourcestest.Append(t, legacy+"l", migrated)
	h.WaitFor(t, "the migrated chat", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(id)
		return ok && s.Status == sourcestest.StatusDone && s.Model == "gemini-2.5-pro"
	})
	if n := len(h.Snapshots()); n != 1 {
		t.Errorf("%d sessions, want 1", n)
	}
	if err := os.Remove(legacy); err != nil { // the old file going away ends nothing
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, ok := h.Shown(id); !ok {
		t.Error("removing the superseded legacy chat removed the session")
	}
}

// A .project_root written after the chat's first line still gives the
// session its cwd; one that is a FIFO is skipped with a typed diagnostic.
func TestProjectRootLateAndHostile(t *testing.T) {
	home := t.TempDir()
	late := filepath.Join(home, "tmp", "late")
	hostile := filepath.Join(home, "tmp", "hostile")
	for _, d := range []string{late, hostile} {
		if err := os.MkdirAll(filepath.Join(d, "chats"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(hostile, ".project_root"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, _ := run(t, home, HarnessGemini)
	const a, b = "aaaaaaaa-1111-4111-8111-111111111111", "bbbbbbbb-1111-4111-8111-111111111111"
	sourcestest.Append(t, filepath.Join(late, "chats", "session-2026-12-01T10-00-aaaaaaaa.jsonl"), `{"sessionId":"`+a+`","startTime":"2026-12-01T10:00:00Z","kind":"main"}`+"\n")
	sourcestest.Append(t, filepath.Join(hostile, "chats", "session-2026-12-01T10-00-bbbbbbbb.jsonl"), `{"sessionId":"`+b+`","startTime":"2026-12-01T10:00:00Z","kind":"main"}`+"\n")
	h.WaitFor(t, "both sessions", func(h *sourcestest.Hub) bool { return len(h.Snapshots()) == 2 })
	if err := os.WriteFile(filepath.Join(late, ".project_root"), []byte("/srv/late\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the late cwd", func(h *sourcestest.Hub) bool { s, _ := h.Shown(a); return s.Cwd == "/srv/late" })
	h.WaitFor(t, "the FIFO's diagnostic", func(h *sourcestest.Hub) bool {
		for _, d := range h.Diagnostics() {
			if d.Code == sources.CodeSideNotRegular {
				return true
			}
		}
		return false
	})
	if s, _ := h.Shown(b); s.Cwd != "" {
		t.Errorf("cwd from a FIFO: %q", s.Cwd)
	}
}

// Gemini CLI's start-up cleanup deletes the project's chats that hold no
// conversation yet, another TUI's still running included; that TUI's next
// record recreates the file without its metadata line. The session leaves
// with its file and comes back, the same session, with that record.
func TestChatDeletedUnderItsCLI(t *testing.T) {
	home, _, chat := chatHome(t)
	h, _ := run(t, home, HarnessGemini)
	sourcestest.Append(t, chat, `{"sessionId":"`+sid+`","projectHash":"x","startTime":"2026-12-01T10:00:00.000Z","lastUpdated":"2026-12-01T10:00:00.000Z","kind":"main"}`+"\n")
	h.WaitFor(t, "the session", kittest.Status(sid, agentbridge.StatusIdle))
	if err := os.Remove(chat); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the session to leave", func(h *sourcestest.Hub) bool { _, ok := h.Shown(sid); return !ok })
	sourcestest.Append(t, chat, `{"id":"u1","timestamp":"2026-12-01T10:00:05.000Z","type":"user","content":[{"text":"list the files"}]}`+"\n")
	// The turn and its title are two events (folded one after the other):
	// wait for both before the check.
	h.WaitFor(t, "the session back, running, with its title", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(sid)
		return ok && s.Status == agentbridge.StatusRunning && s.Title != ""
	})
	if s, _ := h.Shown(sid); s.Cwd != "/work/myproj" || s.Title != "list the files" {
		t.Errorf("back: %+v", s)
	}
	sourcestest.Append(t, chat, `{"id":"g1","timestamp":"2026-12-01T10:00:06.000Z","type":"gemini","content":"Here.","model":"gemini-3-flash"}`+"\n")
	h.WaitFor(t, "done", kittest.Status(sid, sourcestest.StatusDone))
	if d := h.Diagnostics(); len(d) != 0 {
		t.Errorf("diagnostics %+v", d)
	}
}
