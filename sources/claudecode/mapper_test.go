package claudecode

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// step is one input to a mapper in a rule test: a transcript line, or a
// registry state when reg is set.
type step struct {
	line    string
	reg     *RegistryState
	endIdle bool // the registry showed the process idle past the grace
}

var idleStep = step{endIdle: true}

func lines(ls ...string) []step {
	out := make([]step, len(ls))
	for i, l := range ls {
		out[i] = step{line: l}
	}
	return out
}

func regStep(st RegistryStatus, waitingFor, id string) step {
	return step{reg: &RegistryState{Status: st, WaitingFor: waitingFor, WaitID: id}}
}

// run feeds steps to a fresh mapper and folds the events; it fails the test
// on any event the fold rejects.
func run(t *testing.T, infer bool, steps []step) (agentbridge.Snapshot, []agentbridge.Event) {
	t.Helper()
	m := NewMapper("s-1", MapperOptions{InferWaits: infer})
	s := fold.NewSession("s-1", Harness)
	var all []agentbridge.Event
	apply := func(evs []agentbridge.Event) {
		for _, e := range evs {
			if is := s.Apply(e); len(is) > 0 {
				t.Fatalf("fold rejects %s: %+v", e.Kind, is)
			}
			all = append(all, e)
		}
	}
	for _, st := range steps {
		if st.endIdle {
			if m.IdleEnds() {
				apply(m.EndIdle(m.Turn(), 0))
			}
			continue
		}
		if st.reg != nil {
			apply(m.Registry(*st.reg, 0))
			continue
		}
		evs, err := m.Line([]byte(st.line))
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		apply(evs)
	}
	return sourcestest.Shown(s), all
}

const sid = "s-1"

func u(text string) string {
	return rec(sid, 1, "user", fmt.Sprintf(`"promptId":"p-%d","message":{"role":"user","content":%q}`, len(text), text))
}

func TestMapperRules(t *testing.T) {
	for _, tc := range []struct {
		name     string
		infer    bool
		steps    []step
		status   agentbridge.Status
		lastTurn agentbridge.LastTurn
		title    string
		waiting  string
		subs     string // "id:status,…"
		turns    int    // turn.started events expected; 0: not checked
		statuses string // the statuses the session went through, repeats folded; "": not checked
	}{
		{name: "a prompt starts a turn", steps: lines(u("fix the bug")),
			status: agentbridge.StatusRunning, title: "fix the bug"},
		{name: "turn_duration ends it", steps: lines(u("hi"), reply(sid, 2, "hello", ""), rec(sid, 3, "system", `"subtype":"turn_duration"`)),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnCompleted, title: "hi"},
		{name: "end_turn with no open tool ends it (versions without turn_duration)", steps: lines(u("hi"), reply(sid, 2, "hello", "end_turn")),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnCompleted, title: "hi"},
		{name: "end_turn with an open tool does not", steps: lines(u("hi"), toolUse(sid, 2, "t1", "Bash", `{}`), reply(sid, 3, "x", "end_turn")),
			status: agentbridge.StatusRunning, title: "hi"},
		{name: "interrupt marker cancels", steps: lines(u("hi"), toolUse(sid, 2, "t1", "Bash", `{}`),
			rec(sid, 3, "user", `"message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}`)),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnInterrupted, title: "hi"},
		{name: "interrupt with the next prompt appended", steps: lines(u("hi"),
			rec(sid, 3, "user", `"message":{"role":"user","content":"[Request interrupted by user] do this instead"}`)),
			status: agentbridge.StatusRunning, lastTurn: agentbridge.LastTurnInterrupted, title: "hi"},
		{name: "API error record fails the turn", steps: lines(u("hi"),
			rec(sid, 2, "assistant", `"isApiErrorMessage":true,"error":"authentication_failed","apiErrorStatus":401,"message":{"model":"<synthetic>","content":[{"type":"text","text":"Please run /login"}]}`)),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnFailed, title: "hi"},
		{name: "an api_error retry notice is not an end", steps: lines(u("hi"), rec(sid, 2, "system", `"subtype":"api_error","retryAttempt":1,"maxRetries":10`)),
			status: agentbridge.StatusRunning, title: "hi"},
		{name: "compaction is not a new turn", steps: lines(u("hi"), reply(sid, 2, "x", "end_turn"),
			rec(sid, 3, "system", `"subtype":"compact_boundary","compactMetadata":{"trigger":"auto"}`),
			rec(sid, 4, "user", `"isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"Summary of the conversation"}`)),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnCompleted, title: "hi"},
		{name: "slash commands, caveats, meta and reminders are not prompts", steps: lines(
			rec(sid, 1, "user", `"message":{"role":"user","content":"<command-name>/model</command-name>"}`),
			rec(sid, 2, "user", `"message":{"role":"user","content":"<local-command-stdout>ok</local-command-stdout>"}`),
			rec(sid, 3, "user", `"message":{"role":"user","content":"Caveat: the messages below"}`),
			rec(sid, 4, "user", `"isMeta":true,"message":{"role":"user","content":"Base directory for this skill"}`),
			rec(sid, 5, "user", `"message":{"role":"user","content":"<system-reminder>x</system-reminder>"}`)),
			status: agentbridge.StatusIdle},
		{name: "the prompt a slash command sends the model starts its turn", steps: lines(
			rec(sid, 1, "user", `"promptId":"p-c","message":{"role":"user","content":"<command-name>/goal</command-name>"}`),
			rec(sid, 2, "user", `"promptId":"p-c","isMeta":true,"message":{"role":"user","content":"A session-scoped Stop hook is now active"}`)),
			status: agentbridge.StatusRunning, turns: 1},
		{name: "a meta record of another prompt, a caveat or a compact summary after a command starts nothing", steps: lines(
			rec(sid, 1, "user", `"promptId":"p-c","message":{"role":"user","content":"<command-name>/compact</command-name>"}`),
			rec(sid, 2, "user", `"promptId":"p-c","isMeta":true,"message":{"role":"user","content":"<local-command-caveat>Caveat</local-command-caveat>"}`),
			rec(sid, 3, "user", `"promptId":"p-x","isMeta":true,"message":{"role":"user","content":"Base directory for this skill"}`),
			rec(sid, 4, "user", `"promptId":"p-c","isMeta":true,"isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"Summary"}`)),
			status: agentbridge.StatusIdle},
		{name: "title: custom-title beats ai-title beats summary beats prompt", steps: lines(u("the prompt"),
			`{"type":"summary","summary":"a summary"}`, `{"type":"custom-title","customTitle":"mine"}`, `{"type":"ai-title","aiTitle":"the ai's"}`),
			status: agentbridge.StatusRunning, title: "mine"},
		{name: "title: ai-title beats summary", steps: lines(u("the prompt"), `{"type":"summary","summary":"a summary"}`, `{"type":"ai-title","aiTitle":"the ai's"}`),
			status: agentbridge.StatusRunning, title: "the ai's"},
		{name: "title: paths shortened, credentials redacted, bounded", steps: lines(u("deploy /home/alice/keys/prod.pem with sk-ant-api03-" + strings.Repeat("a", 90) + " " + strings.Repeat("x", 300))),
			status: agentbridge.StatusRunning, title: "?"},
		{name: "sidechain records (1.0 inline) are not the session's", steps: lines(u("hi"),
			rec(sid, 2, "user", `"isSidechain":true,"message":{"role":"user","content":"subagent prompt"}`),
			rec(sid, 3, "assistant", `"isSidechain":true,"message":{"model":"haiku","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn"}`)),
			status: agentbridge.StatusRunning, title: "hi"},
		{name: "denied tool is cancelled, the turn goes on", steps: lines(u("hi"), toolUse(sid, 2, "t1", "Edit", `{}`),
			toolResult(sid, 3, "t1", "The user doesn't want to proceed with this tool use. The tool use was rejected", true, `"User rejected tool use"`)),
			status: agentbridge.StatusRunning, title: "hi"},
		{name: "AskUserQuestion pending is inferred waiting", infer: true, steps: lines(u("ask me"), toolUse(sid, 2, "t1", "AskUserQuestion", `{"questions":[]}`)),
			status: agentbridge.StatusWaiting, title: "ask me", waiting: "answer a question"},
		{name: "ExitPlanMode pending is inferred waiting", infer: true, steps: lines(u("plan"), toolUse(sid, 2, "t1", "ExitPlanMode", `{"plan":"p"}`)),
			status: agentbridge.StatusWaiting, title: "plan", waiting: "approve the plan"},
		{name: "answered question: running again", infer: true, steps: lines(u("ask me"), toolUse(sid, 2, "t1", "AskUserQuestion", `{}`), toolResult(sid, 3, "t1", "User has answered", false, "")),
			status: agentbridge.StatusRunning, title: "ask me"},
		{name: "no inference without the option (a registry observes waits)", steps: lines(u("ask me"), toolUse(sid, 2, "t1", "AskUserQuestion", `{}`)),
			status: agentbridge.StatusRunning, title: "ask me"},
		{name: "registry waiting during a turn names the pending tool", steps: append(lines(u("hi"), toolUse(sid, 2, "t1", "Bash", `{}`)), regStep(RegistryWaiting, "permission prompt", "w1")),
			status: agentbridge.StatusWaiting, title: "hi", waiting: "Approve Bash"},
		{name: "waitingFor: the command, its paths shortened", steps: append(lines(u("hi"), toolUse(sid, 2, "t1", "Bash", `{"command":"touch /home/alice/proj/marker","description":"Create it"}`)), regStep(RegistryWaiting, "permission prompt", "w1")),
			status: agentbridge.StatusWaiting, title: "hi", waiting: "Approve Bash: touch …/marker"},
		{name: "waitingFor: a file tool names its file", steps: append(lines(u("hi"), toolUse(sid, 2, "t1", "Write", `{"file_path":"/home/alice/proj/notes.md","content":"x"}`)), regStep(RegistryWaiting, "permission prompt", "w1")),
			status: agentbridge.StatusWaiting, title: "hi", waiting: "Approve Write: …/notes.md"},
		{name: "waitingFor: a credential in the command is redacted", steps: append(lines(u("hi"), toolUse(sid, 2, "t1", "Bash", `{"command":"curl -H 'Authorization: Bearer sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789'"}`)), regStep(RegistryWaiting, "permission prompt", "w1")),
			status: agentbridge.StatusWaiting, title: "hi", waiting: "?"},
		{name: "waitingFor: a long command is bounded", steps: append(lines(u("hi"), toolUse(sid, 2, "t1", "Bash", `{"command":"echo `+strings.Repeat("word ", 100)+`"}`)), regStep(RegistryWaiting, "permission prompt", "w1")),
			status: agentbridge.StatusWaiting, title: "hi", waiting: "?"},
		{name: "waitingFor: a pending question is a question", steps: append(lines(u("hi"), toolUse(sid, 2, "t1", "AskUserQuestion", `{"questions":[]}`)), regStep(RegistryWaiting, "permission prompt", "w1")),
			status: agentbridge.StatusWaiting, title: "hi", waiting: "answer a question"},
		{name: "waitingFor: the registry's text while no tool is pending", steps: append(lines(u("hi")), regStep(RegistryWaiting, "permission prompt", "w1")),
			status: agentbridge.StatusWaiting, title: "hi", waiting: "permission prompt"},
		{name: "waitingFor: a tool_use read after the registry wait renames it", steps: append(append(lines(u("hi")), regStep(RegistryWaiting, "permission prompt", "w1")), lines(toolUse(sid, 2, "t1", "Bash", `{"command":"ls"}`))...),
			status: agentbridge.StatusWaiting, title: "hi", waiting: "Approve Bash: ls", statuses: "idle running waiting"},
		{name: "waitingFor: the renamed wait ends with the registry's", steps: append(append(lines(u("hi")), regStep(RegistryWaiting, "permission prompt", "w1")), append(lines(toolUse(sid, 2, "t1", "Bash", `{"command":"ls"}`)), regStep(RegistryBusy, "", ""))...),
			status: agentbridge.StatusRunning, title: "hi", statuses: "idle running waiting running"},
		{name: "a reply written block by block, each with end_turn, is one turn", steps: lines(u("hi"),
			rec(sid, 2, "assistant", `"message":{"model":"m","id":"msg_1","role":"assistant","content":[{"type":"thinking","thinking":"hm"}],"stop_reason":"end_turn"}`),
			rec(sid, 3, "assistant", `"message":{"model":"m","id":"msg_1","role":"assistant","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn"}`)),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnCompleted, title: "hi", turns: 1},
		{name: "a new reply after the end is a new turn", steps: lines(u("hi"), reply(sid, 2, "one", "end_turn"), reply(sid, 3, "two", "end_turn")),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnCompleted, title: "hi", turns: 2},
		{name: "idle past the grace with no reply: cancelled", steps: []step{step{line: u("hi")}, regStep(RegistryBusy, "", ""), regStep(RegistryIdle, "", ""), idleStep},
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnInterrupted, title: "hi", turns: 1},
		{name: "idle past the grace after a reply: completed", steps: []step{step{line: u("hi")}, regStep(RegistryBusy, "", ""), step{line: reply(sid, 2, "partial", "")}, idleStep},
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnCompleted, title: "hi", turns: 1},
		{name: "idle before any busy (the state at the prompt) ends nothing", steps: []step{regStep(RegistryIdle, "", ""), step{line: u("hi")}, regStep(RegistryIdle, "", ""), idleStep},
			status: agentbridge.StatusRunning, title: "hi", turns: 1},
		{name: "busy before the prompt was read counts", steps: []step{regStep(RegistryBusy, "", ""), step{line: u("hi")}, regStep(RegistryIdle, "", ""), idleStep},
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnInterrupted, title: "hi", turns: 1},
		{name: "idle grace after the journal ended the turn: nothing more", steps: []step{step{line: u("hi")}, step{line: reply(sid, 2, "ok", "end_turn")}, idleStep},
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnCompleted, title: "hi", turns: 1},
		{name: "registry approved", steps: append(lines(u("hi"), toolUse(sid, 2, "t1", "Bash", `{}`)), regStep(RegistryWaiting, "approve Bash", "w1"), regStep(RegistryBusy, "", "")),
			status: agentbridge.StatusRunning, title: "hi"},
		{name: "registry status closes inferred waits", infer: true, steps: append(lines(u("q"), toolUse(sid, 2, "t1", "AskUserQuestion", `{}`)), regStep(RegistryBusy, "", "")),
			status: agentbridge.StatusRunning, title: "q"},
		{name: "registry waiting before the prompt opens with the turn", steps: append([]step{regStep(RegistryWaiting, "approve Bash", "w1")}, lines(u("hi"))...),
			status: agentbridge.StatusWaiting, title: "hi", waiting: "approve Bash"},
		{name: "registry waiting with no turn (a dialog at the prompt) is not shown", steps: append(lines(u("hi"), reply(sid, 2, "x", "end_turn")), regStep(RegistryWaiting, "dialog open", "w1")),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnCompleted, title: "hi"},
		{name: "subagent: Agent tool_use to tool_result status", steps: lines(u("go"),
			toolUse(sid, 2, "ta", "Agent", `{"description":"Survey","subagent_type":"Explore"}`),
			toolUse(sid, 3, "tb", "Task", `{"description":"Fail"}`),
			toolUse(sid, 4, "tc", "Agent", `{"description":"Bg"}`),
			toolResult(sid, 5, "ta", "done", false, `{"status":"completed","agentId":"a1"}`),
			toolResult(sid, 6, "tb", "boom", true, `{"status":"failed"}`),
			toolResult(sid, 7, "tc", "Async agent launched", false, `{"status":"async_launched","agentId":"a3"}`),
			reply(sid, 8, "launched", "end_turn")),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnCompleted, title: "go", subs: "ta:completed,tb:failed,tc:running"},
		{name: "background subagent ends with its task-notification", steps: lines(u("go"),
			toolUse(sid, 2, "tc", "Agent", `{"description":"Bg"}`),
			toolResult(sid, 3, "tc", "Async agent launched", false, `{"status":"async_launched","agentId":"a3"}`),
			reply(sid, 4, "launched", "end_turn"),
			rec(sid, 5, "user", `"origin":{"kind":"task-notification"},"message":{"role":"user","content":"<task-notification>\n<task-id>a3</task-id>\n<tool-use-id>tc</tool-use-id>\n<status>completed</status>"}`)),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnCompleted, title: "go", subs: "tc:completed"},
		{name: "interrupted turn cancels its foreground subagent", steps: lines(u("go"),
			toolUse(sid, 2, "ta", "Agent", `{"description":"Survey"}`),
			rec(sid, 3, "user", `"message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}`)),
			status: sourcestest.StatusDone, lastTurn: agentbridge.LastTurnInterrupted, title: "go", subs: "ta:cancelled"},
		{name: "malformed and unknown lines are skipped", steps: lines("{nope", "[1]", `{"type":"brand-new-type","x":1}`, `{"no":"type"}`, u("hi")),
			status: agentbridge.StatusRunning, title: "hi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, evs := run(t, tc.infer, tc.steps)
			if tc.waiting == "?" {
				if strings.Contains(snap.WaitingFor, "sk-ant") || len([]rune(snap.WaitingFor)) > validate.MaxWaitingFor || !strings.HasPrefix(snap.WaitingFor, "Approve Bash: ") {
					t.Errorf("waitingFor leaks or is too long: %q", snap.WaitingFor)
				}
				tc.waiting = snap.WaitingFor
			}
			if tc.statuses != "" {
				if got := statusTrail(t, tc.infer, tc.steps); got != tc.statuses {
					t.Errorf("statuses %q, want %q", got, tc.statuses)
				}
			}
			if tc.turns > 0 {
				n := 0
				for _, e := range evs {
					if e.Kind == agentbridge.KindTurnStarted {
						n++
					}
				}
				if n != tc.turns {
					t.Errorf("%d turns started, want %d", n, tc.turns)
				}
			}
			if snap.Status != tc.status || snap.LastTurn != tc.lastTurn || snap.WaitingFor != tc.waiting {
				t.Errorf("status %q lastTurn %q waitingFor %q; want %q %q %q", snap.Status, snap.LastTurn, snap.WaitingFor, tc.status, tc.lastTurn, tc.waiting)
			}
			if tc.title == "?" {
				if strings.Contains(snap.Title, "alice") || strings.Contains(snap.Title, "sk-ant") || text.UTF16Len(snap.Title) > validate.MaxTitle {
					t.Errorf("title leaks or is too long: %q", snap.Title)
				}
			} else if snap.Title != tc.title {
				t.Errorf("title %q, want %q", snap.Title, tc.title)
			}
			var subs []string
			for _, s := range snap.Subagents {
				subs = append(subs, s.ID+":"+string(s.Status))
			}
			if got := strings.Join(subs, ","); got != tc.subs {
				t.Errorf("subagents %q, want %q", got, tc.subs)
			}
		})
	}
}

// statusTrail replays steps and lists the statuses the snapshot went
// through after each event, repeats folded: what a client sees.
func statusTrail(t *testing.T, infer bool, steps []step) string {
	t.Helper()
	_, evs := run(t, infer, steps)
	s := fold.NewSession("s-1", Harness)
	var trail []string
	for _, e := range evs {
		s.Apply(e)
		if st := string(sourcestest.Shown(s).Status); len(trail) == 0 || trail[len(trail)-1] != st {
			trail = append(trail, st)
		}
	}
	return strings.Join(trail, " ")
}

func TestMalformedLine(t *testing.T) {
	m := NewMapper("s", MapperOptions{})
	for _, l := range []string{"{not json", "[1,2]", `"str"`, "42", `{"type":"user","message":`} {
		evs, err := m.Line([]byte(l))
		if !errors.Is(err, ErrMalformed) || len(evs) != 0 {
			t.Errorf("%q: events %v err %v; want no event and ErrMalformed", l, evs, err)
		}
		if err != nil && strings.Contains(err.Error(), "json") && strings.Contains(err.Error(), l) {
			t.Errorf("%q: the error quotes the line: %v", l, err)
		}
	}
}

func TestTurnIDsUnique(t *testing.T) {
	// Two prompts that share a promptId (or carry an unusable one) still
	// get distinct, valid turn ids.
	_, evs := run(t, false, lines(
		rec(sid, 1, "user", `"promptId":"same","message":{"role":"user","content":"one"}`), reply(sid, 2, "x", "end_turn"),
		rec(sid, 3, "user", `"promptId":"same","message":{"role":"user","content":"two"}`), reply(sid, 4, "x", "end_turn"),
		rec(sid, 5, "user", `"promptId":"[trimmed for fixture]","uuid":"also bad","message":{"role":"user","content":"three"}`)))
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Kind != agentbridge.KindTurnStarted {
			continue
		}
		if seen[e.TurnID] || !validate.ValidID(e.TurnID) {
			t.Errorf("turn id %q repeated or invalid", e.TurnID)
		}
		seen[e.TurnID] = true
	}
	if len(seen) != 3 {
		t.Errorf("%d turns, want 3", len(seen))
	}
}

// TestLateTailAfterExit: lines the exited process wrote, read only after
// its exit was seen (the exit and the last write race), are still what it
// did: the prompt is the title, the turn completed; LateExit then leaves
// the session exited, with one turn. A later process's lines (bound with
// SetOrigin) are read as usual.
func TestLateTailAfterExit(t *testing.T) {
	m := NewMapper("s-1", MapperOptions{})
	s := fold.NewSession("s-1", Harness)
	apply := func(evs []agentbridge.Event) {
		for _, e := range evs {
			if is := s.Apply(e); len(is) > 0 {
				t.Fatalf("fold rejects %s: %+v", e.Kind, is)
			}
		}
	}
	line := func(l string) {
		evs, err := m.Line([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		apply(evs)
	}
	m.Gone(time.Date(2026, 5, 1, 12, 0, 5, 0, time.UTC).UnixMilli())
	apply(m.Exited(0, nil, ""))
	if evs := m.LateExit(); len(evs) != 0 {
		t.Fatalf("LateExit with no late line: %v", evs)
	}
	apply(m.LateExit())
	// The exit seen while its turn was open, the rest of that turn after.
	m2 := NewMapper("s-2", MapperOptions{})
	s2 := fold.NewSession("s-2", Harness)
	var turns int
	for _, evs := range [][]agentbridge.Event{
		evsOf(m2.Line([]byte(prompt(sid, 1, "p-1", "answer headless")))),
		func() []agentbridge.Event {
			m2.Gone(time.Date(2026, 5, 1, 12, 0, 5, 0, time.UTC).UnixMilli())
			return m2.Exited(0, nil, "")
		}(),
		evsOf(m2.Line([]byte(reply(sid, 2, "Headless answer.", "end_turn")))),
		m2.LateExit(),
	} {
		for _, e := range evs {
			if is := s2.Apply(e); len(is) > 0 {
				t.Fatalf("fold rejects %s: %+v", e.Kind, is)
			}
			if e.Kind == agentbridge.KindTurnStarted {
				turns++
			}
		}
	}
	if snap := sourcestest.Shown(s2); turns != 1 || snap.Status != sourcestest.StatusExited || snap.LastTurn != agentbridge.LastTurnCompleted {
		t.Errorf("a turn cut by the exit: %d turns, %+v; want one, exited, completed", turns, snap)
	}

	line(prompt(sid, 1, "p-1", "answer headless")) // 12:00:01: written before the exit
	line(toolUse(sid, 2, "t1", "Bash", `{"command":"ls"}`))
	line(toolResult(sid, 3, "t1", "ok", false, ""))
	line(reply(sid, 4, "Headless answer.", "end_turn"))
	line(rec(sid, 5, "system", `"subtype":"turn_duration","durationMs":10`))
	apply(m.LateExit())
	snap := sourcestest.Shown(s)
	if snap.Status != sourcestest.StatusExited || snap.LastTurn != agentbridge.LastTurnCompleted || snap.Title != "answer headless" {
		t.Errorf("after the late tail: %+v, want exited, last turn completed, titled", snap)
	}
	if evs := m.LateExit(); len(evs) != 0 {
		t.Errorf("LateExit twice: %v", evs)
	}
	// A resumed process (bound with SetOrigin) writes on: read as usual.
	m.SetOrigin(4242, "/work/proj", 0)
	apply([]agentbridge.Event{m.Restate()})
	line(prompt(sid, 9, "p-9", "next"))
	apply(m.LateExit())
	if snap := s.Snapshot(); snap.Status != agentbridge.StatusRunning {
		t.Errorf("a new process's prompt: status %q, want running", snap.Status)
	}
}

func evsOf(evs []agentbridge.Event, err error) []agentbridge.Event {
	if err != nil {
		panic(err)
	}
	return append([]agentbridge.Event(nil), evs...)
}

// A prompt written after records of its own turn (2.1.242 appends from
// several threads) starts no second turn; a prompt stamped after the
// turn began is a turn of its own.
func TestPromptWrittenLate(t *testing.T) {
	count := func(evs []agentbridge.Event) int {
		n := 0
		for _, e := range evs {
			if e.Kind == agentbridge.KindTurnStarted {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		name  string
		lines []step
		turns int
		trail string
	}{
		{"after the reply ended the turn", lines(reply(sid, 3, "hi", "end_turn"), prompt(sid, 1, "p-1", "say hello")), 1, "idle running done"},
		{"inside the turn it opened", lines(toolUse(sid, 3, "toolu_1", "Read", `{}`), prompt(sid, 1, "p-1", "read it"),
			toolResult(sid, 4, "toolu_1", "ok", false, ""), reply(sid, 5, "done", "end_turn")), 1, "idle running done"},
		{"a later prompt is a new turn", lines(reply(sid, 3, "hi", "end_turn"), prompt(sid, 4, "p-2", "next")), 2, "idle running done running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, evs := run(t, false, tc.lines)
			if n := count(evs); n != tc.turns {
				t.Errorf("%d turns, want %d: %v", n, tc.turns, evs)
			}
			if got := statusTrail(t, false, tc.lines); got != tc.trail {
				t.Errorf("statuses %q, want %q", got, tc.trail)
			}
		})
	}
}

// TestAPIErrorIsTheTurnsError: a turn an API error ended shows why, as
// Claude Code showed it, redacted; without a text, the error's kind and
// status.
func TestAPIErrorIsTheTurnsError(t *testing.T) {
	for _, tc := range []struct{ name, record, want string }{
		{"overloaded", `"isApiErrorMessage":true,"error":"server_error","apiErrorStatus":529,"message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}]}`,
			`API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"a key in the text is redacted", `"isApiErrorMessage":true,"error":"authentication_failed","apiErrorStatus":401,"message":{"model":"<synthetic>","content":[{"type":"text","text":"Invalid API key sk-ant-api03-AbCdEf0123456789AbCdEf0123456789 · Please run /login"}]}`,
			"Invalid API key [redacted] · Please run /login"},
		{"no text", `"isApiErrorMessage":true,"error":"rate_limit","apiErrorStatus":429,"message":{"model":"<synthetic>","content":[]}`,
			"API error: rate_limit (429)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, _ := run(t, false, lines(u("hi"), rec(sid, 2, "assistant", tc.record)))
			if snap.LastTurn != agentbridge.LastTurnFailed || snap.Error != tc.want {
				t.Errorf("lastTurn %q error %q, want failed %q", snap.LastTurn, snap.Error, tc.want)
			}
		})
	}
	// the next turn's success clears it
	snap, _ := run(t, false, lines(u("hi"), rec(sid, 2, "assistant", `"isApiErrorMessage":true,"error":"rate_limit","message":{"content":[]}`),
		u("again"), reply(sid, 4, "done", "end_turn")))
	if snap.LastTurn != agentbridge.LastTurnCompleted || snap.Error != "" {
		t.Errorf("after a good turn: lastTurn %q error %q", snap.LastTurn, snap.Error)
	}
}
