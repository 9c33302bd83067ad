package fold

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
	"github.com/agentbridge/agentbridge/validate/validatetest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// pc is an expected issue: path and code; messages are not compared.
type pc = validatetest.Want[validate.Code]

type E = agentbridge.Event
type S = agentbridge.Snapshot
type Sub = agentbridge.Subagent

// step is one event and the issues Apply must return for it (none: it
// folds).
type step struct {
	e    E
	want []pc
}

func ok(e E) step                       { return step{e: e} }
func rejected(e E, want ...string) step { return step{e, validatetest.Issues[validate.Code](want...)} }

var sessionCmp = cmp.AllowUnexported(Session{}, openWait{}, openTool{}, counted{})

// run applies steps to s, checking each step's issues and that a rejected
// event changes nothing.
func run(t *testing.T, s *Session, steps []step) {
	t.Helper()
	for i, st := range steps {
		before := s.Clone()
		got := s.Apply(st.e)
		validatetest.Check(t, "Apply(step "+strconv.Itoa(i)+" "+string(st.e.Kind)+")", got, st.want)
		if len(got) > 0 {
			if diff := cmp.Diff(before, s, sessionCmp, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("rejected step %d changed the session (-before +after):\n%s", i, diff)
			}
		}
		if is := validate.Snapshot(s.Snapshot(), nil); len(is) != 0 {
			t.Errorf("after step %d the snapshot is invalid: %v", i, is)
		}
		accessorsAgree(t, s, i)
	}
}

// accessorsAgree checks that the cheap accessors (Model, Cwd, Title,
// Usage: the hub's recorder reads them per event) say what Snapshot and
// Activity say.
func accessorsAgree(t *testing.T, s *Session, step int) {
	t.Helper()
	sn, u := s.Snapshot(), agentbridge.Usage{}
	if a := s.Activity(); a != nil && a.Usage != nil {
		u = *a.Usage
	}
	got := [4]any{s.Model(), s.Cwd(), s.Title(), s.Usage()}
	if want := [4]any{sn.Model, sn.Cwd, sn.Title, u}; got != want {
		t.Errorf("after step %d the accessors say %v, the snapshot and activity %v", step, got, want)
	}
}

func exit(n int) *int { return &n }

func base(mod func(s *S)) S {
	s := S{ID: "sess-1", Harness: "example-agent", Status: agentbridge.StatusIdle}
	if mod != nil {
		mod(&s)
	}
	return s
}

// foldCase is an event sequence and the snapshot it must yield.
type foldCase struct {
	name    string
	from    *S // nil: NewSession
	steps   []step
	want    S
	stopped bool
}

var foldCases = []foldCase{
	{"new session is idle", nil, nil, base(nil), false},
	{"session.started sets fields", nil, []step{
		ok(E{Kind: "session.started", Title: "Fix tests", Model: "m1", Cwd: "/work/app", PID: 42}),
	}, base(func(s *S) { s.Title, s.Model, s.Cwd, s.PID = "Fix tests", "m1", "/work/app", 42 }), false},
	{"session.started keeps a running status", nil, []step{
		ok(E{Kind: "turn.started", TurnID: "t1"}),
		ok(E{Kind: "session.started", PID: 5}),
	}, base(func(s *S) { s.Status, s.PID = "running", 5 }), false},
	{"session.started after exited is idle", nil, []step{
		ok(E{Kind: "agent.exited"}),
		ok(E{Kind: "session.started", PID: 6}),
	}, base(func(s *S) { s.PID = 6 }), false},
	{"metadata title and model", nil, []step{
		ok(E{Kind: "agent.metadata", Title: "T1", Model: "m"}),
		ok(E{Kind: "agent.metadata", Title: "T2", AgentID: "a1"}),
	}, base(func(s *S) { s.Title, s.Model = "T2", "m" }), false},
	{"metadata prompt is a title only when none", nil, []step{
		ok(E{Kind: "agent.metadata", PromptText: "first prompt"}),
		ok(E{Kind: "agent.metadata", PromptText: "second prompt"}),
	}, base(func(s *S) { s.Title = "first prompt" }), false},
	{"turn prompt becomes the title", nil, []step{
		ok(E{Kind: "turn.started", TurnID: "t1", PromptText: "Fix the flaky test"}),
		ok(E{Kind: "turn.started", TurnID: "t2", PromptText: "now the docs"}),
	}, base(func(s *S) { s.Status, s.Title = "running", "Fix the flaky test" }), false},
	{"tool started runs", nil, []step{
		ok(E{Kind: "tool.started", ToolID: "tool1", Name: "Bash"}),
		ok(E{Kind: "tool.finished", ToolID: "tool1", Outcome: "success"}),
	}, base(func(s *S) { s.Status = "running" }), false},
	{"wait shows state and reason", nil, []step{
		ok(E{Kind: "turn.started", TurnID: "t1"}),
		ok(E{Kind: "wait.started", WaitID: "w1", State: "waiting", Reason: "Approve shell command"}),
	}, base(func(s *S) { s.Status, s.WaitingFor = "waiting", "Approve shell command" }), false},
	{"wait without reason", nil, []step{
		ok(E{Kind: "wait.started", WaitID: "w1", State: "blocked"}),
	}, base(func(s *S) { s.Status = "blocked" }), false},
	{"wait finished runs again", nil, []step{
		ok(E{Kind: "wait.started", WaitID: "w1", State: "waiting", Reason: "r"}),
		ok(E{Kind: "wait.finished", WaitID: "w1"}),
	}, base(func(s *S) { s.Status = "running" }), false},
	{"nested waits show the latest open", nil, []step{
		ok(E{Kind: "wait.started", WaitID: "w1", State: "blocked", Reason: "rate limited"}),
		ok(E{Kind: "wait.started", WaitID: "w2", State: "waiting", Reason: "approve"}),
		ok(E{Kind: "wait.finished", WaitID: "w2"}),
	}, base(func(s *S) { s.Status, s.WaitingFor = "blocked", "rate limited" }), false},
	{"closing the older wait keeps the newer", nil, []step{
		ok(E{Kind: "wait.started", WaitID: "w1", State: "blocked", Reason: "rate limited"}),
		ok(E{Kind: "wait.started", WaitID: "w2", State: "waiting", Reason: "approve"}),
		ok(E{Kind: "wait.finished", WaitID: "w1"}),
	}, base(func(s *S) { s.Status, s.WaitingFor = "waiting", "approve" }), false},
	{"tool during a wait keeps waiting", nil, []step{
		ok(E{Kind: "wait.started", WaitID: "w1", State: "waiting", Reason: "approve"}),
		ok(E{Kind: "tool.started", ToolID: "x", Name: "Read"}),
	}, base(func(s *S) { s.Status, s.WaitingFor, s.Tool = "waiting", "approve", "Read" }), false},
	{"turn.started closes open waits", nil, []step{
		ok(E{Kind: "wait.started", WaitID: "w1", State: "waiting", Reason: "approve"}),
		ok(E{Kind: "turn.started", TurnID: "t2"}),
		rejected(E{Kind: "wait.finished", WaitID: "w1"}, "$.waitId", "invalid_id"),
	}, base(func(s *S) { s.Status = "running" }), false},
	{"done success", nil, []step{
		ok(E{Kind: "turn.started", TurnID: "t1"}),
		ok(E{Kind: "agent.done", Outcome: "success", OccurredAt: 1764489600000}),
	}, base(func(s *S) { s.Status, s.LastTurn, s.LastTurnEndedAt = "idle", "completed", 1764489600000 }), false},
	{"done error", nil, []step{ok(E{Kind: "agent.done", Outcome: "error"})},
		base(func(s *S) { s.Status, s.LastTurn = "idle", "failed" }), false},
	{"done error with a summary is the error", nil, []step{
		ok(E{Kind: "turn.started", TurnID: "t1"}),
		ok(E{Kind: "agent.done", Outcome: "error", Summary: "API Error: 429 rate limit exceeded"}),
	}, base(func(s *S) { s.Status, s.LastTurn, s.Error = "idle", "failed", "API Error: 429 rate limit exceeded" }), false},
	{"a later success clears the error", nil, []step{
		ok(E{Kind: "agent.done", Outcome: "error", Summary: "quota exceeded"}),
		ok(E{Kind: "turn.started", TurnID: "t2"}),
		ok(E{Kind: "agent.done", Outcome: "success"}),
	}, base(func(s *S) { s.Status, s.LastTurn = "idle", "completed" }), false},
	{"the summary of a success is no error", nil, []step{ok(E{Kind: "agent.done", Outcome: "success", Summary: "all good"})},
		base(func(s *S) { s.Status, s.LastTurn = "idle", "completed" }), false},
	{"tool shows the latest open tool", nil, []step{
		ok(E{Kind: "tool.started", ToolID: "t1", Name: "Bash"}),
		ok(E{Kind: "tool.started", ToolID: "t2", Name: "Read"}),
	}, base(func(s *S) { s.Status, s.Tool = "running", "Read" }), false},
	{"tool falls back to the older open tool", nil, []step{
		ok(E{Kind: "tool.started", ToolID: "t1", Name: "Bash"}),
		ok(E{Kind: "tool.started", ToolID: "t2", Name: "Read"}),
		ok(E{Kind: "tool.finished", ToolID: "t2"}),
	}, base(func(s *S) { s.Status, s.Tool = "running", "Bash" }), false},
	{"nested subagents name their parent", nil, []step{
		ok(E{Kind: "subagent.started", SubagentID: "a", ParentAgentID: "sess-1", Type: "general-purpose"}),
		ok(E{Kind: "subagent.started", SubagentID: "b", ParentAgentID: "a"}),
		ok(E{Kind: "subagent.started", SubagentID: "c", ParentAgentID: "gone"}),
	}, base(func(s *S) {
		s.Subagents = []Sub{{ID: "a", Type: "general-purpose", Status: "running"},
			{ID: "b", ParentID: "a", Type: "subagent", Status: "running"}, {ID: "c", Type: "subagent", Status: "running"}}
	}), false},
	{"done cancelled without time clears the old time", nil, []step{
		ok(E{Kind: "agent.done", Outcome: "success", OccurredAt: 10}),
		ok(E{Kind: "agent.done", Outcome: "cancelled"}),
	}, base(func(s *S) { s.Status, s.LastTurn = "idle", "interrupted" }), false},
	{"done closes waits and tools", nil, []step{
		ok(E{Kind: "tool.started", ToolID: "t", Name: "Bash"}),
		ok(E{Kind: "wait.started", WaitID: "w", State: "waiting", Reason: "approve"}),
		ok(E{Kind: "agent.done", Outcome: "success"}),
		rejected(E{Kind: "wait.finished", WaitID: "w"}, "$.waitId", "invalid_id"),
		rejected(E{Kind: "tool.finished", ToolID: "t"}, "$.toolId", "invalid_id"),
	}, base(func(s *S) { s.Status, s.LastTurn = "idle", "completed" }), false},
	{"next turn after done keeps lastTurn", nil, []step{
		ok(E{Kind: "agent.done", Outcome: "success", OccurredAt: 7}),
		ok(E{Kind: "turn.started", TurnID: "t2"}),
	}, base(func(s *S) { s.Status, s.LastTurn, s.LastTurnEndedAt = "running", "completed", 7 }), false},
	{"exited closes everything and cancels running subagents", nil, []step{
		ok(E{Kind: "subagent.started", SubagentID: "a", ParentAgentID: "root", Type: "explore", Title: "Find callers"}),
		ok(E{Kind: "subagent.started", SubagentID: "b", ParentAgentID: "root"}),
		ok(E{Kind: "subagent.done", SubagentID: "b", Outcome: "success"}),
		ok(E{Kind: "wait.started", WaitID: "w", State: "waiting", Reason: "approve"}),
		ok(E{Kind: "agent.exited", ExitCode: exit(137), Signal: "SIGKILL"}),
		rejected(E{Kind: "wait.finished", WaitID: "w"}, "$.waitId", "invalid_id"),
	}, base(func(s *S) {
		s.Status = "idle"
		s.Subagents = []Sub{{ID: "a", Type: "explore", Title: "Find callers", Status: "cancelled"}, {ID: "b", Type: "subagent", Status: "completed"}}
	}), false},
	{"turn after exited revives", nil, []step{
		ok(E{Kind: "agent.exited"}),
		ok(E{Kind: "turn.started", TurnID: "t9"}),
	}, base(func(s *S) { s.Status = "running" }), false},
	{"subagent outcomes", nil, []step{
		ok(E{Kind: "subagent.started", SubagentID: "a", ParentAgentID: "r"}),
		ok(E{Kind: "subagent.started", SubagentID: "b", ParentAgentID: "r"}),
		ok(E{Kind: "subagent.started", SubagentID: "c", ParentAgentID: "r"}),
		ok(E{Kind: "subagent.done", SubagentID: "a", Outcome: "success", Summary: "ok"}),
		ok(E{Kind: "subagent.done", SubagentID: "b", Outcome: "error"}),
		ok(E{Kind: "subagent.done", SubagentID: "c", Outcome: "cancelled"}),
		rejected(E{Kind: "subagent.done", SubagentID: "c", Outcome: "success"}, "$.subagentId", "invalid_id"),
		rejected(E{Kind: "subagent.done", SubagentID: "zz", Outcome: "success"}, "$.subagentId", "invalid_id"),
		rejected(E{Kind: "subagent.started", SubagentID: "a", ParentAgentID: "r"}, "$.subagentId", "duplicate"),
	}, base(func(s *S) {
		s.Subagents = []Sub{{ID: "a", Type: "subagent", Status: "completed"}, {ID: "b", Type: "subagent", Status: "failed"}, {ID: "c", Type: "subagent", Status: "cancelled"}}
	}), false},
	{"stopped", nil, []step{ok(E{Kind: "session.stopped", Reason: "terminal closed"})}, base(nil), true},
	{"state rules", nil, []step{
		rejected(E{Kind: "wait.finished", WaitID: "nope"}, "$.waitId", "invalid_id"),
		rejected(E{Kind: "tool.finished", ToolID: "nope"}, "$.toolId", "invalid_id"),
		ok(E{Kind: "wait.started", WaitID: "w", State: "waiting"}),
		rejected(E{Kind: "wait.started", WaitID: "w", State: "blocked"}, "$.waitId", "duplicate"),
		ok(E{Kind: "tool.started", ToolID: "t", Name: "Edit"}),
		rejected(E{Kind: "tool.started", ToolID: "t", Name: "Edit"}, "$.toolId", "duplicate"),
		ok(E{Kind: "tool.finished", ToolID: "t"}),
		rejected(E{Kind: "tool.finished", ToolID: "t"}, "$.toolId", "invalid_id"),
		ok(E{Kind: "wait.finished", WaitID: "w"}),
		rejected(E{Kind: "wait.finished", WaitID: "w"}, "$.waitId", "invalid_id"),
	}, base(func(s *S) { s.Status = "running" }), false},
	{"event rules reject too", nil, []step{
		rejected(E{Kind: "turn.started"}, "$.turnId", "missing_field"),
		rejected(E{Kind: "turn.started", TurnID: "t", PromptText: strings.Repeat("x", validate.MaxTitle+1)}, "$.promptText", "invalid_string"),
		rejected(E{Kind: "wait.started", WaitID: "w", State: "done"}, "$.state", "invalid_enum"),
		rejected(E{Kind: "session.started", Cwd: "rel"}, "$.cwd", "invalid_path"),
		rejected(E{Kind: "session.started", PID: -1}, "$.pid", "invalid_integer"),
		rejected(E{Kind: "session.started", ToolID: "x"}, "$.toolId", "unknown_field"),
		rejected(E{Kind: "nope"}, "$.kind", "invalid_enum"),
		rejected(E{Kind: "wait.finished", WaitID: "a b"}, "$.waitId", "invalid_id"),
		rejected(E{Kind: "subagent.started", SubagentID: "s", ParentAgentID: "p", Type: "\n"}, "$.type", "invalid_string"),
	}, base(nil), false},
	{"from snapshot", &S{ID: "s2", Harness: "codex", Status: "idle", LastTurn: "failed", Subagents: []Sub{{ID: "k", Type: "t", Status: "running"}}}, []step{
		ok(E{Kind: "subagent.done", SubagentID: "k", Outcome: "success"}),
	}, S{ID: "s2", Harness: "codex", Status: "idle", LastTurn: "failed", Subagents: []Sub{{ID: "k", Type: "t", Status: "completed"}}}, false},
	{"from waiting snapshot without tracked waits", &S{ID: "s3", Harness: "codex", Status: "waiting", WaitingFor: "approve"}, []step{
		ok(E{Kind: "tool.started", ToolID: "t", Name: "Bash"}),
	}, S{ID: "s3", Harness: "codex", Status: "running", Tool: "Bash"}, false},
}

func TestFold(t *testing.T) {
	t.Parallel()
	tests := foldCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewSession("sess-1", "example-agent")
			if tt.from != nil {
				s = FromSnapshot(*tt.from)
			}
			run(t, s, tt.steps)
			if diff := cmp.Diff(tt.want, s.Snapshot()); diff != "" {
				t.Errorf("snapshot mismatch (-want +got):\n%s", diff)
			}
			if s.Stopped() != tt.stopped {
				t.Errorf("Stopped() = %v, want %v", s.Stopped(), tt.stopped)
			}
		})
	}
}

func TestFoldLimits(t *testing.T) {
	t.Parallel()
	t.Run("waits", func(t *testing.T) {
		t.Parallel()
		s := NewSession("s", "h")
		var steps []step
		for i := range MaxOpenWaits {
			steps = append(steps, ok(E{Kind: "wait.started", WaitID: "w" + strconv.Itoa(i), State: "waiting"}))
		}
		steps = append(steps, rejected(E{Kind: "wait.started", WaitID: "one-more", State: "waiting"}, "$.waitId", "invalid_array"))
		run(t, s, steps)
	})
	t.Run("tools", func(t *testing.T) {
		t.Parallel()
		s := NewSession("s", "h")
		var steps []step
		for i := range MaxOpenTools {
			steps = append(steps, ok(E{Kind: "tool.started", ToolID: "t" + strconv.Itoa(i), Name: "Bash"}))
		}
		steps = append(steps, rejected(E{Kind: "tool.started", ToolID: "one-more", Name: "Bash"}, "$.toolId", "invalid_array"))
		run(t, s, steps)
	})
	t.Run("subagents: the oldest finished makes room", func(t *testing.T) {
		t.Parallel()
		s := NewSession("s", "h")
		var steps []step
		for i := range validate.MaxSubagents {
			steps = append(steps, ok(E{Kind: "subagent.started", SubagentID: "a" + strconv.Itoa(i), ParentAgentID: "r"}))
		}
		steps = append(steps,
			rejected(E{Kind: "subagent.started", SubagentID: "full", ParentAgentID: "r"}, "$.subagentId", "invalid_array"),
			ok(E{Kind: "subagent.done", SubagentID: "a7", Outcome: "success"}),
			ok(E{Kind: "subagent.done", SubagentID: "a3", Outcome: "success"}),
			ok(E{Kind: "subagent.started", SubagentID: "new", ParentAgentID: "r"}),
		)
		run(t, s, steps)
		subs := s.Snapshot().Subagents
		if len(subs) != validate.MaxSubagents {
			t.Fatalf("len(subagents) = %d, want %d", len(subs), validate.MaxSubagents)
		}
		for _, a := range subs {
			if a.ID == "a3" {
				t.Errorf("the oldest finished subagent a3 is still listed")
			}
		}
		if last := subs[len(subs)-1]; last.ID != "new" || last.Status != "running" {
			t.Errorf("last subagent = %+v, want new/running", last)
		}
	})
}

func TestSessionCopies(t *testing.T) {
	t.Parallel()
	s := NewSession("s", "h")
	run(t, s, []step{
		ok(E{Kind: "subagent.started", SubagentID: "a", ParentAgentID: "r"}),
		ok(E{Kind: "wait.started", WaitID: "w", State: "waiting"}),
		ok(E{Kind: "tool.started", ToolID: "t", Name: "n"}),
	})
	snap := s.Snapshot()
	snap.Subagents[0].Status = "failed"
	if s.Snapshot().Subagents[0].Status != "running" {
		t.Errorf("changing a Snapshot() result changed the session")
	}
	c := s.Clone()
	run(t, c, []step{
		ok(E{Kind: "wait.finished", WaitID: "w"}),
		ok(E{Kind: "tool.finished", ToolID: "t"}),
		ok(E{Kind: "agent.exited"}),
	})
	if got := s.Snapshot(); got.Status != "waiting" || got.Subagents[0].Status != "running" {
		t.Errorf("changing a Clone changed the original: %+v", got)
	}
	// The original still has its wait and tool open.
	run(t, s, []step{ok(E{Kind: "wait.finished", WaitID: "w"}), ok(E{Kind: "tool.finished", ToolID: "t"})})

	in := S{ID: "x", Harness: "h", Status: "idle", Subagents: []Sub{{ID: "a", Type: "t", Status: "running"}}}
	f := FromSnapshot(in)
	run(t, f, []step{ok(E{Kind: "subagent.done", SubagentID: "a", Outcome: "error"})})
	if in.Subagents[0].Status != "running" {
		t.Errorf("FromSnapshot shares the caller's subagents")
	}
	if f.ID() != "x" || f.Harness() != "h" {
		t.Errorf("ID(), Harness() = %q, %q", f.ID(), f.Harness())
	}
}
