package fold

import (
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// hstep is a journal event (ev) or a hook (hk), then the status and
// waitingFor the session shows after it.
type hstep struct {
	ev     *agentbridge.Event
	hk     *Hook
	status agentbridge.Status
	reason string
	events int // lifecycle events the hook folded; -1: not checked
}

func jr(e agentbridge.Event, st agentbridge.Status, reason string) hstep {
	return hstep{ev: &e, status: st, reason: reason, events: -1}
}

func hk(h Hook, st agentbridge.Status, reason string, events int) hstep {
	return hstep{hk: &h, status: st, reason: reason, events: events}
}

var (
	turn = func(at int64) agentbridge.Event {
		return agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: at}
	}
	toolStart = func(id string) agentbridge.Event {
		return agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: id, Name: "Bash"}
	}
	toolEnd = func(id string, at int64) agentbridge.Event {
		return agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: id, OccurredAt: at}
	}
	done = func(at int64) agentbridge.Event {
		return agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: at}
	}
	pre = func(key, tool string, at int64) Hook { return Hook{Kind: HookTool, Key: key, ToolID: tool, At: at} }
	ask = func(key string, at int64) Hook {
		return Hook{Kind: HookAsk, Key: key, Reason: "Approve Bash: git push", At: at}
	}
	answer = func(key, tool string, at int64) Hook { return Hook{Kind: HookAnswered, Key: key, ToolID: tool, At: at} }
	stop   = func(at int64) Hook { return Hook{Kind: HookTurnEnd, At: at} }
)

const (
	running = agentbridge.StatusRunning
	waiting = agentbridge.StatusWaiting
	isDone  = agentbridge.StatusIdle // a finished turn: idle with lastTurn
	exited  = agentbridge.StatusIdle // an ended session: idle with Ended
	why     = "Approve Bash: git push"
)

func TestHookFusion(t *testing.T) {
	tests := []struct {
		name  string
		steps []hstep
	}{
		{"a permission request waits, its PostToolUse answers it", []hstep{
			jr(turn(10), running, ""),
			jr(toolStart("toolu_1"), running, ""),
			hk(ask("k1", 12), waiting, why, 1),
			hk(answer("k1", "toolu_1", 13), running, "", 1),
		}},
		{"the journal's tool result proves a bound prompt over", []hstep{
			jr(turn(10), running, ""),
			jr(toolStart("toolu_1"), running, ""),
			hk(pre("k1", "toolu_1", 11), running, "", 0),
			hk(ask("k1", 12), waiting, why, 1),
			jr(toolEnd("toolu_1", 14), running, ""),
			hk(answer("k1", "toolu_1", 15), running, "", 0), // late: nothing left to close
		}},
		{"a denial answers the prompt", []hstep{
			jr(turn(10), running, ""),
			hk(pre("k1", "toolu_1", 11), running, "", 0),
			hk(ask("k1", 12), waiting, why, 1),
			hk(Hook{Kind: HookAnswered, Key: "k1", ToolID: "toolu_1", At: 13}, running, "", 1),
		}},
		{"out of order: the PostToolUse arrives before its PermissionRequest", []hstep{
			jr(turn(10), running, ""),
			hk(answer("k1", "", 20), running, "", 0),
			hk(ask("k1", 15), running, "", 0),
		}},
		{"out of order, bound: the tool finished before the prompt arrived", []hstep{
			jr(turn(10), running, ""),
			jr(toolStart("toolu_1"), running, ""),
			hk(pre("k1", "toolu_1", 11), running, "", 0),
			jr(toolEnd("toolu_1", 14), running, ""),
			hk(ask("k1", 12), running, "", 0),
		}},
		{"a duplicated hook opens one wait", []hstep{
			jr(turn(10), running, ""),
			hk(ask("k1", 12), waiting, why, 1),
			hk(ask("k1", 12), waiting, why, 0),
			hk(answer("k1", "", 13), running, "", 1),
		}},
		{"a late permission request after the turn's Stop never resurrects the wait", []hstep{
			jr(turn(10), running, ""),
			hk(ask("k1", 12), waiting, why, 1),
			hk(stop(30), running, "", 1),
			hk(ask("k1", 25), running, "", 0),
			hk(ask("k2", 28), running, "", 0),
		}},
		{"a wait the journal proves over is over: the turn ended", []hstep{
			jr(turn(10), running, ""),
			hk(ask("k1", 12), waiting, why, 1),
			jr(done(50), isDone, ""),
			hk(ask("k1", 12), isDone, "", 0), // a retried post of the old hook
		}},
		{"the journal never hides a newer hook: the turn record arrives after the prompt", []hstep{
			jr(done(5), isDone, ""),
			hk(ask("k1", 105), waiting, why, 1),
			jr(turn(100), waiting, why),
			jr(toolStart("toolu_9"), waiting, why),
			hk(answer("k1", "", 110), running, "", 1),
		}},
		{"a done the journal dates before the prompt keeps the prompt", []hstep{
			jr(turn(10), running, ""),
			hk(ask("k1", 40), waiting, why, 1),
			jr(done(35), waiting, why),
		}},
		{"a hook's reason wins over the journal's guess, in either order", []hstep{
			jr(turn(10), running, ""),
			jr(agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "reg-1", State: waiting, Reason: "approve Bash"}, waiting, "approve Bash"),
			hk(ask("k1", 12), waiting, why, 1),
			jr(agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "reg-2", State: waiting, Reason: "permission prompt"}, waiting, why),
			jr(agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "reg-2"}, waiting, why),
			hk(answer("k1", "", 13), waiting, "approve Bash", 1),
			jr(agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "reg-1"}, running, ""),
		}},
		{"the same command twice in a turn waits twice", []hstep{
			jr(turn(10), running, ""),
			hk(pre("k1", "toolu_1", 11), running, "", 0),
			hk(ask("k1", 12), waiting, why, 1),
			hk(answer("k1", "toolu_1", 13), running, "", 1),
			jr(toolStart("toolu_2"), running, ""),
			hk(pre("k1", "toolu_2", 14), running, "", 0),
			hk(ask("k1", 15), waiting, why, 1),
			jr(toolEnd("toolu_2", 16), running, ""),
		}},
		{"the process exits mid-prompt", []hstep{
			jr(turn(10), running, ""),
			hk(ask("k1", 12), waiting, why, 1),
			jr(agentbridge.Event{Kind: agentbridge.KindAgentExited, OccurredAt: 20}, exited, ""),
			hk(ask("k1", 12), exited, "", 0),
		}},
		{"a late prompt after an exit the journal does not date", []hstep{
			jr(turn(10), running, ""),
			jr(agentbridge.Event{Kind: agentbridge.KindAgentExited}, exited, ""),
			hk(ask("k1", 50), exited, "", 0),
			jr(agentbridge.Event{Kind: agentbridge.KindSessionStarted}, agentbridge.StatusIdle, ""),
			hk(ask("k1", 60), waiting, why, 1),
		}},
		{"a restarted bridge: the session is rebuilt from its journal, the answer comes late", []hstep{
			// what the journal holds of the turn; the PermissionRequest was
			// taken by the bridge before it restarted
			jr(turn(10), running, ""),
			jr(toolStart("toolu_1"), running, ""),
			hk(answer("k1", "toolu_1", 30), running, "", 0),
			hk(ask("k1", 12), running, "", 0), // a retried post of the old prompt
			jr(toolEnd("toolu_1", 31), running, ""),
		}},
		{"an interrupt ends the prompt", []hstep{
			jr(turn(10), running, ""),
			hk(ask("k1", 12), waiting, why, 1),
			hk(ask("k2", 13), waiting, why, 1),
			hk(stop(14), running, "", 2),
		}},
		{"a prompt known from a notification ends with the journal's next tool result", []hstep{
			jr(turn(10), running, ""),
			jr(toolStart("t1"), running, ""),
			hk(Hook{Kind: HookAsk, Key: HookNotified, Reason: "Approve shell: ls", At: 12}, waiting, "Approve shell: ls", 1),
			jr(toolEnd("t1", 11), waiting, "Approve shell: ls"), // older than the prompt
			jr(toolStart("t2"), waiting, "Approve shell: ls"),
			jr(toolEnd("t2", 13), running, ""),
		}},
		{"a late notification, run before the answer and posted after it, never resurrects the prompt", []hstep{
			// Claude Code notifies "Claude needs your permission" about 6 s
			// after its dialog appeared; the user answered meanwhile
			jr(turn(10), running, ""),
			jr(toolStart("toolu_1"), running, ""),
			hk(pre("k1", "toolu_1", 11), running, "", 0),
			hk(ask("k1", 12), waiting, why, 1),
			hk(answer("k1", "toolu_1", 20), running, "", 1),
			hk(Hook{Kind: HookAsk, Key: HookNotified, Reason: "Approve a tool", At: 18}, running, "", 0),
		}},
		{"a late notification after the journal's tool result changes nothing", []hstep{
			jr(turn(10), running, ""),
			hk(stop(10), running, "", 0), // UserPromptSubmit
			jr(toolStart("toolu_1"), running, ""),
			jr(toolEnd("toolu_1", 20), running, ""),
			hk(Hook{Kind: HookAsk, Key: HookNotified, Reason: "Approve a tool", At: 18}, running, "", 0),
			// a notification of a later prompt still waits
			jr(toolStart("toolu_2"), running, ""),
			hk(Hook{Kind: HookAsk, Key: HookNotified, Reason: "Approve a tool", At: 25}, waiting, "Approve a tool", 1),
		}},
		{"a prompt without a key changes nothing", []hstep{
			jr(turn(10), running, ""),
			hk(Hook{Kind: HookAsk, Reason: "x", At: 12}, running, "", 0),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSession("s1", "claude-code")
			for i, st := range tt.steps {
				if st.ev != nil {
					if is := s.Apply(*st.ev); len(is) > 0 {
						t.Fatalf("hstep %d: %v rejected: %v", i, st.ev.Kind, is)
					}
				} else {
					evs := s.Hook(*st.hk)
					if st.events >= 0 && len(evs) != st.events {
						t.Errorf("hstep %d: hook folded %d events %v, want %d", i, len(evs), evs, st.events)
					}
					for _, e := range evs {
						if is := validate.Event(e); len(is) > 0 {
							t.Errorf("hstep %d: hook folded an invalid event %+v: %v", i, e, is)
						}
					}
				}
				got := s.Snapshot()
				if got.Status != st.status || got.WaitingFor != st.reason {
					t.Fatalf("hstep %d: status %q waitingFor %q, want %q %q", i, got.Status, got.WaitingFor, st.status, st.reason)
				}
				if is := validate.Snapshot(got, validate.Harnesses{"claude-code": true}); len(is) > 0 {
					t.Fatalf("hstep %d: invalid snapshot: %v", i, is)
				}
			}
		})
	}
}

func TestHookStateIsCloned(t *testing.T) {
	s := NewSession("s1", "codex")
	s.Apply(turn(10))
	s.Hook(ask("k1", 12))
	c := s.Clone()
	c.Hook(answer("k1", "", 13))
	if got := s.Snapshot().Status; got != waiting {
		t.Fatalf("the original changed with its clone: %q", got)
	}
	if got := c.Snapshot().Status; got != running {
		t.Fatalf("clone: %q", got)
	}
	// the clone's memory is its own: a late ask is over only for it
	if evs := s.Hook(ask("k1", 12)); len(evs) != 0 {
		t.Fatalf("duplicate ask folded %v", evs)
	}
}

func TestHookMemoryIsBounded(t *testing.T) {
	s := NewSession("s1", "codex")
	for i := 0; i < 10*maxHookMemory; i++ {
		s.Hook(Hook{Kind: HookTool, Key: "k", ToolID: "t", At: int64(i)})
		s.Hook(Hook{Kind: HookAnswered, Key: "k", At: int64(i)})
	}
	if len(s.hk.bind) > maxHookMemory || len(s.hk.settled) > maxHookMemory {
		t.Fatalf("memory grew: %d bindings, %d settled", len(s.hk.bind), len(s.hk.settled))
	}
}

func TestHookNotification(t *testing.T) {
	s := NewSession("s1", "claude-code")
	s.Apply(turn(10))
	if evs := s.Hook(Hook{Kind: HookAsk, Key: HookNotified, Reason: "Approve Bash", At: 11}); len(evs) != 1 {
		t.Fatalf("a notified prompt folded %v", evs)
	}
	if got := s.Snapshot(); got.Status != waiting || got.WaitingFor != "Approve Bash" {
		t.Fatalf("got %q %q", got.Status, got.WaitingFor)
	}
	if evs := s.Hook(answer("k1", "toolu_1", 12)); len(evs) != 1 {
		t.Fatalf("any answer ends a notified prompt: %v", evs)
	}
	s.Hook(ask("k2", 13))
	if evs := s.Hook(Hook{Kind: HookAsk, Key: HookNotified, Reason: "Approve Bash", At: 14}); len(evs) != 0 {
		t.Fatalf("the notification of a named prompt adds a wait: %v", evs)
	}
	if got := s.Snapshot().WaitingFor; got != why {
		t.Fatalf("waitingFor %q", got)
	}
}

// FuzzHookFold folds any sequence of hooks and journal events: the
// snapshot stays valid, every event a hook folds is valid, and what hooks
// remember stays bounded.
func FuzzHookFold(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0, 2, 2, 3, 0x12, 0x23, 8, 0x44, 6})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s := NewSession("s1", "codex")
		keys := []string{"k1", "k2", HookNotified}
		tools := []string{"", "t1", "t2"}
		for i, op := range ops {
			at := int64(i)*10 + int64(op>>6)
			key, tool := keys[int(op>>4)%3], tools[int(op>>2)%3]
			switch op % 10 {
			case 0:
				s.Apply(turn(at))
			case 1:
				if tool != "" {
					s.Apply(toolStart(tool))
				}
			case 2:
				if tool != "" {
					s.Apply(toolEnd(tool, at))
				}
			case 3:
				s.Apply(done(at))
			case 4:
				s.Apply(agentbridge.Event{Kind: agentbridge.KindAgentExited})
			case 5:
				s.Apply(agentbridge.Event{Kind: agentbridge.KindSessionStarted})
			default:
				kind := HookKind(op%10 - 5)
				for _, e := range s.Hook(Hook{Kind: kind, Key: key, ToolID: tool, Reason: "Approve x", At: at}) {
					if is := validate.Event(e); len(is) > 0 {
						t.Fatalf("invalid hook event %+v: %v", e, is)
					}
				}
			}
			if is := validate.Snapshot(s.Snapshot(), validate.Harnesses{"codex": true}); len(is) > 0 {
				t.Fatalf("invalid snapshot after op %d: %v", i, is)
			}
			if s.hk != nil && (len(s.hk.bind) > maxHookMemory || len(s.hk.settled) > maxHookMemory) {
				t.Fatal("hook memory grew")
			}
		}
	})
}

// TestHookDatesTheWait: the wait a hook opens is dated when the agent ran
// the hook, so the session shows how long it has waited.
func TestHookDatesTheWait(t *testing.T) {
	s := NewSession("s1", "codex")
	s.Apply(turn(10))
	s.Hook(ask("k1", 12))
	if a := s.Activity(); a == nil || a.StatusSince != 12 {
		t.Fatalf("activity %+v, want waiting since 12", a)
	}
	s.Hook(answer("k1", "", 20))
	if a := s.Activity(); a == nil || a.StatusSince != 20 {
		t.Fatalf("activity %+v, want running since 20", a)
	}
}
