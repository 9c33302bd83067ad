package codex

import (
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	foldpkg "github.com/agentbridge/agentbridge/fold"
)

// TestUsageMatchesRollouts replays recorded rollouts and compares each
// thread's token usage with the rollout's own last token_count totals
// (total_token_usage: input less cached, output, cached), worked out from
// the files independently of the mapper. The totals are cumulative and
// repeated: summing them would count each call many times.
func TestUsageMatchesRollouts(t *testing.T) {
	u := func(in, out, cached int64) *agentbridge.Usage {
		return &agentbridge.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cached}
	}
	for _, tt := range []struct {
		dir  string
		want map[string]*agentbridge.Usage // by thread id; nil: no usage recorded
	}{
		{"catalog", map[string]*agentbridge.Usage{"019fc8be-3658-7ca3-9e29-000000000000": u(0, 0, 0)}},
		{"current-fork", map[string]*agentbridge.Usage{
			"019e5615-1ef8-7270-b988-4f52f86449a4": u(23928, 25, 36608),
			"019e5615-9632-7740-b2cf-3061e4ff06e2": u(47695, 30, 43136),
		}},
		{"current-many-tools", map[string]*agentbridge.Usage{"019d6f34-5400-7351-9296-89e2962b53b8": u(95367, 7945, 998656)}},
		{"current-model-switch", map[string]*agentbridge.Usage{"019e5648-f9f1-7c21-adae-ebe9ce6f518b": u(32588, 28, 30848)}},
		{"current-multi-turn", map[string]*agentbridge.Usage{"019de345-5258-7972-90fa-59e7468fae33": u(18130, 59, 55424)}},
		{"current-plan-pending", map[string]*agentbridge.Usage{"019e1d3e-caef-7141-8a13-c0698015de8c": u(1240, 420, 0)}},
		{"current-toolcall", map[string]*agentbridge.Usage{"019dc91f-21e4-78d3-9ed1-31d84a0a2c7a": u(20782, 172, 26880)}},
		{"old-no-task-events", map[string]*agentbridge.Usage{"019de345-5258-7972-90fa-59e7468fae33": u(18130, 59, 55424)}},
		{"subagent-lifecycle", map[string]*agentbridge.Usage{"019f6249-055d-76d3-b381-cd9d3eb99189": nil}},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			dir := filepath.Join("testdata/rollouts", tt.dir)
			sessions := map[string]*foldpkg.Session{}
			for _, p := range replay(t, NewEngine(), dir, rolloutNames(t, dir)) {
				s := sessions[p.Session]
				if s == nil {
					s = foldpkg.NewSession(p.Session, Harness)
					sessions[p.Session] = s
				}
				if is := s.Apply(p.Event); len(is) > 0 {
					t.Fatalf("fold rejected %+v: %+v", p.Event, is)
				}
			}
			for id, want := range tt.want {
				s := sessions[id]
				if s == nil {
					t.Fatalf("no session %s", id)
				}
				var got *agentbridge.Usage
				if a := s.Activity(); a != nil {
					got = a.Usage
				}
				switch {
				case (got == nil) != (want == nil):
					t.Errorf("%s: usage = %+v, want %+v", id, got, want)
				case got != nil && *got != *want:
					t.Errorf("%s: usage = %+v, want the rollout's own %+v", id, *got, *want)
				}
			}
		})
	}
}
