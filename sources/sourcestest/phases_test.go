package sourcestest_test

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

const (
	idle    = agentbridge.StatusIdle
	running = agentbridge.StatusRunning
	waiting = agentbridge.StatusWaiting
	done    = agentbridge.StatusIdle     // a finished turn
	exited  = agentbridge.Status("\x00") // an ended session (idle with Ended)
)

func tr(pairs ...any) []sourcestest.Transition {
	var out []sourcestest.Transition
	for i := 0; i < len(pairs); i += 2 {
		t := sourcestest.Transition{Session: pairs[i].(string), Status: pairs[i+1].(agentbridge.Status)}
		if t.Status == exited {
			t.Status, t.Ended = agentbridge.StatusIdle, true
		}
		out = append(out, t)
	}
	return out
}

func TestCheckPhases(t *testing.T) {
	birth := sourcestest.Phase{Name: "birth", State: "ready", RelativeTo: "start"}
	turn := sourcestest.Phase{Name: "turn", State: "working", RelativeTo: "birth"}
	end := sourcestest.Phase{Name: "end", State: "ready", RelativeTo: "turn", SameSessionAs: "turn"}
	for _, tc := range []struct {
		name    string
		phases  []sourcestest.Phase
		trans   []sourcestest.Transition
		exits   bool
		problem string // "" for none; else a part of the one problem
	}{
		{name: "a turn", phases: []sourcestest.Phase{birth, turn, end},
			trans: tr("a", idle, "a", running, "a", done)},
		{name: "extra states between phases are fine", phases: []sourcestest.Phase{birth, {Name: "end", State: "ready", RelativeTo: "birth", SameSessionAs: "birth"}},
			trans: tr("a", idle, "a", running, "a", waiting, "a", running, "a", done)},
		{name: "a missing state", phases: []sourcestest.Phase{birth, turn, end},
			trans: tr("a", idle, "a", running), problem: "phase end: session a never becomes ready"},
		{name: "out of order", phases: []sourcestest.Phase{birth, {Name: "w", State: "waiting", RelativeTo: "birth"}, turn},
			trans: tr("a", idle, "a", running, "a", waiting), problem: "phase turn: session a never becomes working"},
		{name: "a held state needs no new transition",
			phases: []sourcestest.Phase{birth, turn, end, {Name: "hold", State: "ready", RelativeTo: "end", SameSessionAs: "turn", Invariants: []string{"no state_transition to working"}}},
			trans:  tr("a", idle, "a", running, "a", done)},
		{name: "an invariant broken",
			phases: []sourcestest.Phase{birth, {Name: "turn", State: "working", RelativeTo: "birth", Invariants: []string{"no state_transition to ready"}}, end},
			trans:  tr("a", idle, "a", running, "a", done, "a", running, "a", done), problem: `invariant "no state_transition to ready" broken`},
		{name: "an invariant broken inside its window",
			phases: []sourcestest.Phase{birth, {Name: "turn", State: "working", RelativeTo: "birth", Invariants: []string{"no state_transition to waiting"}}, end},
			trans:  tr("a", idle, "a", running, "a", waiting, "a", running, "a", done), problem: `invariant "no state_transition to waiting" broken: session a went waiting at position 2`},
		{name: "an invariant ends at the next phase",
			phases: []sourcestest.Phase{birth, {Name: "turn", State: "working", RelativeTo: "birth", Invariants: []string{"no state_transition to ready"}}, end},
			trans:  tr("a", idle, "a", running, "a", done)},
		{name: "removal breaks no transcript_removed",
			phases: []sourcestest.Phase{birth, {Name: "hold", State: "ready", RelativeTo: "birth", Invariants: []string{"no transcript_removed for primary session"}}},
			trans:  tr("a", idle, "a", agentbridge.Status("")), problem: "went gone"},
		{name: "presession and unseen kinds are skipped",
			phases: []sourcestest.Phase{{Name: "presession_birth", State: "ready", SessionIDPrefix: "proc-"}, {Name: "pid", Kind: "pid_discovered"}, birth},
			trans:  tr("a", idle)},
		{name: "exits checked", exits: true,
			phases: []sourcestest.Phase{birth, turn, {Name: "exit", Kind: "process_exited", RelativeTo: "turn", SameSessionAs: "turn"}},
			trans:  tr("a", idle, "a", running, "a", exited)},
		{name: "exits missing", exits: true,
			phases: []sourcestest.Phase{birth, turn, {Name: "exit", Kind: "process_exited", RelativeTo: "turn", SameSessionAs: "turn"}},
			trans:  tr("a", idle, "a", running, "a", done), problem: "never becomes exited"},
		{name: "exits not checked are left out of the sequence",
			phases: []sourcestest.Phase{birth, turn, {Name: "exit", Kind: "process_exited", RelativeTo: "turn", SameSessionAs: "turn"}, {Name: "resume", State: "ready", SameSessionAs: "turn"}},
			trans:  tr("a", idle, "a", running, "a", exited, "a", idle)},
		{name: "new sessions in birth order",
			phases: []sourcestest.Phase{birth, {Name: "b", State: "working", NewSession: true, RelativeTo: "birth"}, {Name: "bend", State: "ready", SameSessionAs: "b"}},
			trans:  tr("a", idle, "b", idle, "a", running, "b", running, "b", done)},
		{name: "the second session must do it",
			phases: []sourcestest.Phase{birth, {Name: "b", State: "working", NewSession: true, RelativeTo: "birth"}},
			trans:  tr("a", idle, "b", idle, "a", running), problem: "session b never becomes working"},
		{name: "no session left", phases: []sourcestest.Phase{birth, {Name: "b", State: "ready", NewSession: true}},
			trans: tr("a", idle), problem: "no session for it"},
		{name: "same_session_as an unknown phase", phases: []sourcestest.Phase{{Name: "x", State: "ready", SameSessionAs: "nope"}},
			trans: tr("a", idle), problem: "names no checked phase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, _ := sourcestest.CheckPhases(tc.phases, tc.trans, sourcestest.Checked{Exits: tc.exits})
			switch {
			case tc.problem == "" && len(problems) > 0:
				t.Errorf("problems %q, want none", problems)
			case tc.problem != "" && (len(problems) != 1 || !strings.Contains(problems[0], tc.problem)):
				t.Errorf("problems %q, want one containing %q", problems, tc.problem)
			}
		})
	}
}
