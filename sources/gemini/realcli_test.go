package gemini

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// Chats the real Gemini CLI 0.61.0 wrote in the live suite (see
// testdata/SOURCES.md): a shell command approved, and one denied with
// Escape. The denial appends "Request cancelled." and then resets the
// history it sends the model ($set.messages with the session context
// alone): the turn stays cancelled, with its prompt as the title, and the
// reset starts no turn.
func TestRealShellApproval(t *testing.T) {
	for _, c := range []struct {
		file     string
		lastTurn agentbridge.LastTurn
		tool     agentbridge.Outcome
	}{
		{"testdata/chats/v0.61-shell-approved.jsonl", agentbridge.LastTurnCompleted, agentbridge.OutcomeSuccess},
		{"testdata/chats/v0.61-shell-denied.jsonl", agentbridge.LastTurnInterrupted, agentbridge.OutcomeCancelled},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		s := split(HarnessGemini, data)
		if len(s) != 1 {
			t.Fatalf("%s: %d sessions", c.file, len(s))
		}
		g := replayFile(t, HarnessGemini, "sess-1", s[0].lines)
		var turns int
		var tools []string
		var outcome agentbridge.Outcome
		for _, l := range g.Lines {
			if l.Rebuild {
				t.Errorf("%s: rebuilt", c.file)
			}
		}
		for _, e := range g.AllEvents() {
			switch e.Kind {
			case agentbridge.KindTurnStarted:
				turns++
			case agentbridge.KindToolStarted:
				tools = append(tools, e.Name)
			case agentbridge.KindToolFinished:
				outcome = e.Outcome
			}
		}
		snap := g.Snapshot
		if turns != 1 || len(tools) != 1 || tools[0] != "Shell" || outcome != c.tool {
			t.Errorf("%s: %d turns, tools %v ended %q", c.file, turns, tools, outcome)
		}
		if g.Shown != sourcestest.StatusDone || snap.LastTurn != c.lastTurn || snap.Title != "make the marker" {
			t.Errorf("%s: status %s lastTurn %s title %q", c.file, snap.Status, snap.LastTurn, snap.Title)
		}
	}
}

// A generalist subagent Gemini CLI 0.61.0 ran through invoke_agent (the
// live suite's chats, laid out as the CLI does): the parent lists it, and
// it is completed once its chat shows the complete_task call that hands
// its result back (a subagent writes no text reply).
func TestRealSubagent(t *testing.T) {
	home := t.TempDir()
	const parent, child = "63789f95-d9d5-4164-8712-60c18551792c", "2b775487-d08d-4fc7-81e7-37fd28587bfb"
	chats := filepath.Join(home, "tmp", "proj", "chats")
	projectRoot(t, filepath.Dir(chats)) // the CLI ran in /work/myproj, where run's Gemini CLI process runs
	copyTo := func(src, dst string) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		sourcestest.Append(t, dst, string(data))
	}
	h, _ := run(t, home, HarnessGemini)
	copyTo("testdata/chats/v0.61-subagent/parent.jsonl", filepath.Join(chats, "session-2026-12-01T12-38-63789f95.jsonl"))
	copyTo("testdata/chats/v0.61-subagent/child.jsonl", filepath.Join(chats, parent, child+".jsonl"))
	// The tailer may read the child's chat before the parent's: wait for
	// both to be read (the parent's turn over), not only for the child.
	h.WaitFor(t, "the subagent completed and the parent's turn", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(parent)
		return ok && len(s.Subagents) == 1 && s.Subagents[0].ID == child && s.Subagents[0].Status == agentbridge.SubagentCompleted &&
			s.LastTurn != ""
	})
	if s, _ := h.Shown(parent); s.Status != sourcestest.StatusDone || s.LastTurn != agentbridge.LastTurnCompleted || len(h.Snapshots()) != 1 {
		t.Errorf("parent %+v; %d sessions", s, len(h.Snapshots()))
	}
}

// The real subagent chats with the child's complete_task record removed
// (a subagent stopped by a time or turn limit, or an error, never calls
// it): the parent's finished invoke_agent call, which names the child's
// chat session id as its agentId, ends it, with the outcome the call
// gives, whichever of the two chats is read first. With complete_task
// present (the normal path) the subagent still ends exactly once.
func TestRealSubagentEndedByParent(t *testing.T) {
	const parent, child = "63789f95-d9d5-4164-8712-60c18551792c", "2b775487-d08d-4fc7-81e7-37fd28587bfb"
	read := func(p string) string {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	realParent := read("testdata/chats/v0.61-subagent/parent.jsonl")
	const goal, ok = `"terminateReason":"GOAL"`, `"status":"success","timestamp":"2026-12-01T12:38:05.737Z"`
	if !strings.Contains(realParent, goal) || !strings.Contains(realParent, ok) {
		t.Fatal("the parent chat no longer holds the invoke_agent result the cases edit")
	}
	for _, c := range []struct {
		name       string
		child      string
		parent     string
		childFirst bool
		want       agentbridge.SubagentStatus
	}{
		{"no complete_task, parent last", "child-no-complete-task.jsonl", realParent, true, agentbridge.SubagentCompleted},
		{"no complete_task, parent first", "child-no-complete-task.jsonl", realParent, false, agentbridge.SubagentCompleted},
		{"time limit", "child-no-complete-task.jsonl", strings.Replace(realParent, goal, `"terminateReason":"TIMEOUT"`, 1), true, agentbridge.SubagentFailed},
		{"turn limit, parent first", "child-no-complete-task.jsonl", strings.Replace(realParent, goal, `"terminateReason":"MAX_TURNS"`, 1), false, agentbridge.SubagentFailed},
		{"aborted", "child-no-complete-task.jsonl", strings.Replace(realParent, goal, `"terminateReason":"ABORTED"`, 1), true, agentbridge.SubagentCancelled},
		{"call failed", "child-no-complete-task.jsonl", strings.Replace(realParent, ok, `"status":"error","timestamp":"2026-12-01T12:38:05.737Z"`, 1), true, agentbridge.SubagentFailed},
		{"call cancelled", "child-no-complete-task.jsonl", strings.Replace(realParent, ok, `"status":"cancelled","timestamp":"2026-12-01T12:38:05.737Z"`, 1), true, agentbridge.SubagentCancelled},
		// complete_task read first: the parent's result does not end it again.
		{"normal path, parent last", "child.jsonl", realParent, true, agentbridge.SubagentCompleted},
		{"normal path, parent first", "child.jsonl", realParent, false, agentbridge.SubagentCompleted},
		// complete_task said success; the parent's later TIMEOUT does not override it.
		{"complete_task wins", "child.jsonl", strings.Replace(realParent, goal, `"terminateReason":"TIMEOUT"`, 1), true, agentbridge.SubagentCompleted},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			chats := filepath.Join(home, "tmp", "proj", "chats")
			projectRoot(t, filepath.Dir(chats)) // the CLI ran in /work/myproj, where run's Gemini CLI process runs
			h, _ := run(t, home, HarnessGemini)
			h.WaitFor(t, "the first scan", func(h *sourcestest.Hub) bool { return h.Resets() > 0 })
			writeParent := func() {
				sourcestest.Append(t, filepath.Join(chats, "session-2026-12-01T12-38-63789f95.jsonl"), c.parent)
				h.WaitFor(t, "the parent's turn over", func(h *sourcestest.Hub) bool {
					s, ok := h.Shown(parent)
					return ok && s.Status == sourcestest.StatusDone
				})
			}
			writeChild := func() {
				sourcestest.Append(t, filepath.Join(chats, parent, child+".jsonl"), read("testdata/chats/v0.61-subagent/"+c.child))
				h.WaitFor(t, "the subagent listed", func(h *sourcestest.Hub) bool {
					s, ok := h.Shown(parent)
					return ok && len(s.Subagents) == 1
				})
			}
			if c.childFirst {
				writeChild()
				if c.child == "child-no-complete-task.jsonl" {
					if s, _ := h.Shown(parent); s.Subagents[0].Status != agentbridge.SubagentRunning {
						t.Fatalf("without complete_task and before the parent's result: %s", s.Subagents[0].Status)
					}
				}
				writeParent()
			} else {
				writeParent()
				writeChild()
			}
			h.WaitFor(t, "the subagent "+string(c.want), func(h *sourcestest.Hub) bool {
				s, _ := h.Shown(parent)
				return len(s.Subagents) == 1 && s.Subagents[0].ID == child && s.Subagents[0].Status == c.want
			})
			// The child's chat read to its end, then two more turns of the
			// parent, each waited for: a second end or a rejected one (a
			// diagnostic, sent when the source goes idle) would be in by then.
			sourcestest.Append(t, filepath.Join(chats, parent, child+".jsonl"), `{"$set":{"lastUpdated":"2026-12-01T12:38:06.000Z"}}`+"\n")
			for i, line := range []string{`{"id":"u-next","timestamp":"2026-12-01T12:38:07.000Z","type":"user","content":[{"text":"next"}]}`, `{"id":"g-next","timestamp":"2026-12-01T12:38:08.000Z","type":"gemini","content":"ok"}`,
				`{"id":"u-last","timestamp":"2026-12-01T12:38:09.000Z","type":"user","content":[{"text":"last"}]}`} {
				sourcestest.Append(t, filepath.Join(chats, "session-2026-12-01T12-38-63789f95.jsonl"), line+"\n")
				want := []agentbridge.Status{agentbridge.StatusRunning, sourcestest.StatusDone, agentbridge.StatusRunning}[i]
				h.WaitFor(t, "the parent "+string(want), func(h *sourcestest.Hub) bool {
					s, _ := h.Shown(parent)
					return s.Status == want
				})
			}
			if s, _ := h.Shown(parent); len(s.Subagents) != 1 || s.Subagents[0].Status != c.want {
				t.Errorf("subagents afterwards %+v", s.Subagents)
			}
			var dones int
			for _, call := range h.Calls() {
				if call.Event.Kind == agentbridge.KindSubagentDone {
					dones++
				}
			}
			if dones != 1 || len(h.Diagnostics()) != 0 || len(h.Snapshots()) != 1 {
				t.Errorf("%d subagent.done, diagnostics %+v, %d sessions", dones, h.Diagnostics(), len(h.Snapshots()))
			}
		})
	}
}

// The parent's invoke_agent result ends only a subagent of its own: the
// same child chat under another session stays running there.
func TestRealSubagentOfAnotherSession(t *testing.T) {
	const parent, child, other = "63789f95-d9d5-4164-8712-60c18551792c", "2b775487-d08d-4fc7-81e7-37fd28587bfb", "99999999-d9d5-4164-8712-60c18551792c"
	home := t.TempDir()
	chats := filepath.Join(home, "tmp", "proj", "chats")
	projectRoot(t, filepath.Dir(chats)) // the CLI ran in /work/myproj, where run's Gemini CLI process runs
	h, _ := run(t, home, HarnessGemini)
	h.WaitFor(t, "the first scan", func(h *sourcestest.Hub) bool { return h.Resets() > 0 })
	for _, f := range []struct{ src, dst string }{
		{"child-no-complete-task.jsonl", filepath.Join(chats, other, child+".jsonl")},
		{"parent.jsonl", filepath.Join(chats, "session-2026-12-01T12-38-63789f95.jsonl")},
	} {
		data, err := os.ReadFile("testdata/chats/v0.61-subagent/" + f.src)
		if err != nil {
			t.Fatal(err)
		}
		sourcestest.Append(t, f.dst, string(data))
	}
	h.WaitFor(t, "the parent's turn over, the other's subagent listed", func(h *sourcestest.Hub) bool {
		p, _ := h.Shown(parent)
		o, _ := h.Shown(other)
		return p.Status == sourcestest.StatusDone && len(o.Subagents) == 1
	})
	sourcestest.Append(t, filepath.Join(chats, "session-2026-12-01T12-38-63789f95.jsonl"), `{"id":"u-next","timestamp":"2026-12-01T12:38:07.000Z","type":"user","content":[{"text":"next"}]}`+"\n")
	h.WaitFor(t, "the parent running again", func(h *sourcestest.Hub) bool {
		s, _ := h.Shown(parent)
		return s.Status == agentbridge.StatusRunning
	})
	if o, _ := h.Shown(other); o.Subagents[0].Status != agentbridge.SubagentRunning {
		t.Errorf("the other session's subagent: %s", o.Subagents[0].Status)
	}
	if p, _ := h.Shown(parent); len(p.Subagents) != 0 {
		t.Errorf("the parent lists %+v", p.Subagents)
	}
}

// projectRoot writes the .project_root Gemini CLI keeps in a project's
// directory: /work/myproj, where run's fake Gemini CLI process runs.
func projectRoot(t *testing.T, project string) {
	t.Helper()
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".project_root"), []byte("/work/myproj\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
