package hub

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
)

// jsonNames lists the JSON names of t's fields in declaration order.
func jsonNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "-" { // not encoded (Event.Usage)
			out = append(out, name)
		}
	}
	return out
}

func TestFastEncodeKnowsEveryField(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		have []string
	}{
		{reflect.TypeFor[agentbridge.Snapshot](), snapshotFields},
		{reflect.TypeFor[agentbridge.Subagent](), subagentFields},
		{reflect.TypeFor[agentbridge.Event](), eventFields},
		{reflect.TypeFor[agentbridge.Activity](), activityFields},
		{reflect.TypeFor[agentbridge.ToolActivity](), toolFields},
		{reflect.TypeFor[agentbridge.Usage](), usageFields},
		{reflect.TypeFor[agentbridge.Ended](), endedFields},
	} {
		if got := jsonNames(c.typ); !slices.Equal(got, c.have) {
			t.Errorf("%v has JSON fields %v; the fast encoder writes %v: update encode.go", c.typ, got, c.have)
		}
	}
}

func exitCode(n int) *int { return &n }

func TestFastEncodeMatchesEncodingJSON(t *testing.T) {
	odd := "a<b>&c\"d\\e\n\t\r\b\f\x01\x1f é 😀 \u2028\u2029 \xff\xfe end"
	full := agentbridge.Snapshot{
		ID: "s-1", Harness: "claude-code", PID: 4242, Cwd: "/home/u/p", Title: odd, Model: "m<1>",
		Status: agentbridge.StatusWaiting, WaitingFor: "approve & go", Tool: odd, LastTurn: agentbridge.LastTurnFailed, LastTurnEndedAt: 1764489600000,
		Error: odd, Subagents: []agentbridge.Subagent{{ID: "a", Type: "subagent", Status: "running"}, {ID: "b", ParentID: "a", Type: "Explore", Title: odd, Status: "completed"}},
	}
	ev := agentbridge.Event{
		Kind: agentbridge.KindAgentExited, OccurredAt: -5, Title: odd, Model: "m", Cwd: "/", PID: 1, PromptText: odd, AgentID: "x",
		TurnID: "t", ToolID: "to", Name: "Bash", Outcome: "error", WaitID: "w", State: "blocked", Reason: odd, Summary: odd,
		ExitCode: exitCode(-1), Signal: "SIGKILL", SubagentID: "sa", ParentAgentID: "p", Type: "ty",
	}
	values := []any{
		upsertData{Source: "claude-code", Snapshot: agentbridge.Snapshot{ID: "x", Harness: "h", Status: "idle"}},
		upsertData{Source: odd, Snapshot: full},
		upsertData{Snapshot: agentbridge.Snapshot{Subagents: []agentbridge.Subagent{}}},
		lifecycleData{Source: "codex", SessionID: "s", Event: agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "t1", Name: "Bash"}},
		lifecycleData{Source: "codex", SessionID: odd, Event: ev},
		lifecycleData{Event: agentbridge.Event{ExitCode: exitCode(0)}},
		upsertData{Source: "c", Snapshot: full, Activity: &agentbridge.Activity{StatusSince: 1, Tool: &agentbridge.ToolActivity{Name: odd, Since: 2}, TurnStartedAt: 3,
			Usage: &agentbridge.Usage{InputTokens: 4, OutputTokens: 5, CacheReadTokens: 6, CacheWriteTokens: 7}}},
		upsertData{Source: "c", Snapshot: full, Activity: &agentbridge.Activity{Tool: &agentbridge.ToolActivity{Name: "Bash"}}},
		upsertData{Source: "c", Snapshot: full, Activity: &agentbridge.Activity{Usage: &agentbridge.Usage{}}},
		upsertData{Source: "c", Snapshot: full, Activity: &agentbridge.Activity{TurnStartedAt: -9}},
		upsertData{Source: "c", Snapshot: full, Ended: &agentbridge.Ended{At: 5, ExitCode: exitCode(137), Signal: "SIGKILL", Reason: odd}},
		upsertData{Source: "c", Snapshot: full, Ended: &agentbridge.Ended{}},
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := fastEncode(v)
		if !ok || string(got) != string(want) {
			t.Errorf("fastEncode(%+v)\n got %s\nwant %s", v, got, want)
		}
	}
	if _, ok := fastEncode(removeData{Source: "x", SessionID: "y"}); ok {
		t.Error("fastEncode took a shape it does not know")
	}
}

// FuzzEncode checks the fast encoder against encoding/json on any text.
func FuzzEncode(f *testing.F) {
	f.Add("claude-code", "s-1", "Fix the flaky test", "Explore", int64(1764489600000), 3)
	f.Add("a<b>&", "\u2028x\u2029", "\xff\xfe\x00\x1f\"\\", "é😀", int64(-1), 0)
	f.Fuzz(func(t *testing.T, source, id, text, kind string, at int64, n int) {
		snap := agentbridge.Snapshot{ID: id, Harness: kind, PID: n, Cwd: text, Title: text, Model: kind, Status: agentbridge.Status(kind),
			WaitingFor: text, Tool: kind, LastTurn: agentbridge.LastTurn(text), LastTurnEndedAt: at, Error: text}
		for i := range n % 5 {
			snap.Subagents = append(snap.Subagents, agentbridge.Subagent{ID: id, ParentID: text[:min(i, len(text))], Type: kind[:min(i, len(kind))], Title: text, Status: agentbridge.SubagentStatus(kind)})
		}
		ev := agentbridge.Event{Kind: agentbridge.EventKind(kind), OccurredAt: at, Title: text, PromptText: text, Reason: id, Summary: text, Type: kind}
		if n%2 == 0 {
			ev.ExitCode = &n
		}
		ended := &agentbridge.Ended{At: at, Signal: kind, Reason: text}
		if n%3 == 0 {
			ended.ExitCode = &n
		}
		for _, v := range []any{upsertData{Source: source, Snapshot: snap}, upsertData{Source: source, Snapshot: snap, Ended: ended}, lifecycleData{Source: source, SessionID: id, Event: ev}} {
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := fastEncode(v); !ok || string(got) != string(want) {
				t.Fatalf("fastEncode(%+v)\n got %s\nwant %s", v, got, want)
			}
		}
	})
}

// BenchmarkEncodeUpsert encodes the upsert of a busy session (64
// subagents) with the fast encoder and, as the baseline in the same run,
// with encoding/json, in alternating batches. Reported: x-encoding-json,
// the fastest fast batch over the fastest encoding/json batch (minimums
// resist a busy machine's preemptions).
func BenchmarkEncodeUpsert(b *testing.B) {
	snap := agentbridge.Snapshot{ID: "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f", Harness: "claude-code", PID: 4242, Cwd: "/home/user/projects/agentbridge",
		Title: "Make the bench numbers good, with profiles guiding each change", Model: "claude-opus-4-5", Status: agentbridge.StatusRunning}
	for i := range 64 {
		snap.Subagents = append(snap.Subagents, agentbridge.Subagent{ID: "toolu_01ABCDEFGHIJ" + strconv.Itoa(i), Type: "general-purpose",
			Title: "Explore the hub's publish path and report allocations", Status: agentbridge.SubagentCompleted})
	}
	v := upsertData{Source: "claude-code", Snapshot: snap}
	const batch = 10
	b.ReportAllocs()
	fast, std := time.Duration(1<<62), time.Duration(1<<62)
	for b.Loop() {
		t0 := time.Now()
		for range batch {
			if _, ok := fastEncode(v); !ok {
				b.Fatal("not encoded")
			}
		}
		t1 := time.Now()
		for range batch {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
		fast = min(fast, t1.Sub(t0))
		std = min(std, time.Since(t1))
	}
	b.ReportMetric(fast.Seconds()/std.Seconds(), "x-encoding-json")
}
