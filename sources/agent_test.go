package sources

import (
	"reflect"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

// An Agent registers as what it declares: its description, its home
// (an optional agent only when named), its hooks, and a constructor whose
// source describes the same agent.
func TestRegisterAgent(t *testing.T) {
	a := &Agent{
		Single: Single{
			ID: "test-agent", DisplayName: "Test Agent", Harness: "test-agent-cli", HomeEnv: "TEST_AGENT_HOME",
			Env:         []string{"TEST_AGENT_SESSIONS"},
			DefaultHome: HomeUnder(".test-agent"),
			Observes:    map[string]agentbridge.Observe{"exited": ProcessExited()},
			Hooks:       &Hooks{Harness: "test-agent-cli", Events: map[string]fold.HookKind{"Stop": fold.HookTurnEnd}},
		},
		Optional: true,
		Tail:     func(o Options) TailConfig { return TailConfig{Roots: []string{o.Home}} },
		Handler:  HandlerFunc(func(Options, *Sessions) Handler { return nil }),
	}
	RegisterAgent(a)
	defer func() {
		regMu.Lock()
		delete(regs, "test-agent")
		regMu.Unlock()
	}()
	r, ok := Lookup("test-agent")
	if !ok {
		t.Fatal("the agent is not registered")
	}
	if !reflect.DeepEqual(r.Info, a.Info()) {
		t.Errorf("registered %+v, the agent says %+v", r.Info, a.Info())
	}
	env := map[string]string{"HOME": "/home/u", "TEST_AGENT_HOME": "/srv/agent"}
	if h := r.ResolveHome("", func(k string) string { return env[k] }); h != "/srv/agent" {
		t.Errorf("home named by its variable = %q", h)
	}
	if h := r.ResolveHome("", func(k string) string { return map[string]string{"HOME": "/home/u"}[k] }); h != "" {
		t.Errorf("an optional agent's home unnamed = %q, want none", h)
	}
	if h, ok := LookupHooks("test-agent"); !ok || h != a.Hooks {
		t.Errorf("LookupHooks = %v, %v", h, ok)
	}
	if got := r.New(Options{Home: "/srv/agent"}).Info(); !reflect.DeepEqual(got, a.Info()) {
		t.Errorf("the source says %+v", got)
	}
}
