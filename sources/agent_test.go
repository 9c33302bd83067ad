package sources

import (
	"context"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hub"
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
	registerAgent(t, a)
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

// An Agent whose Info depends on its home registers its static Info,
// and each source it makes describes what its own home holds, as it was
// when the source was made.
func TestAgentInfoFor(t *testing.T) {
	a := &Agent{
		Single: Single{ID: "test-agent", DisplayName: "Test Agent", Harness: "test-agent-cli", DefaultHome: HomeUnder(".test-agent"),
			Observes: map[string]agentbridge.Observe{"waiting": {How: agentbridge.Observed, From: "registry"}}},
		Tail:    func(o Options) TailConfig { return TailConfig{Roots: []string{o.Home}} },
		Handler: HandlerFunc(func(Options, *Sessions) Handler { return nil }),
	}
	a.InfoFor = func(o Options) agentbridge.SourceInfo {
		info := a.Single.Info()
		if o.Home != "/with-registry" {
			info.Observes["waiting"] = agentbridge.Observe{How: agentbridge.Inferred, From: "journal"}
		}
		return info
	}
	registerAgent(t, a)
	r, _ := Lookup("test-agent")
	if got := r.Info.Observes["waiting"].How; got != agentbridge.Observed {
		t.Errorf("registered waiting %q, want the static %q", got, agentbridge.Observed)
	}
	for home, want := range map[string]agentbridge.Observation{"/with-registry": agentbridge.Observed, "/without": agentbridge.Inferred} {
		if got := r.New(Options{Home: home}).Info().Observes["waiting"].How; got != want {
			t.Errorf("source of %s says waiting %q, want %q", home, got, want)
		}
	}
}

// An Agent with several harnesses lists them all, in its order; one with
// its own Run runs it with the source's options; one with Metrics makes a
// source the hub can collect (a prometheus.Collector), one without does
// not.
func TestAgentHarnessesRunMetrics(t *testing.T) {
	harnesses := []agentbridge.Harness{{ID: "b-cli", DisplayName: "B"}, {ID: "a-cli", DisplayName: "A"}}
	ran := ""
	counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_agent_total", Help: "test"})
	counter.Add(3)
	a := &Agent{
		Single:  Single{ID: "test-agent2", DisplayName: "Test", Harnesses: harnesses},
		Run:     func(_ context.Context, _ hub.Start, o Options) error { ran = o.Home; return nil },
		Metrics: counter,
	}
	if got := a.Info().Harnesses; !reflect.DeepEqual(got, harnesses) {
		t.Errorf("harnesses %+v, want %+v", got, harnesses)
	}
	registerAgent(t, a)
	r, _ := Lookup("test-agent2")
	src := r.New(Options{Home: "/srv/agent"})
	if err := src.Run(context.Background(), hub.Start{}); err != nil || ran != "/srv/agent" {
		t.Errorf("Run = %v, ran with home %q; want the agent's Run with the source's home", err, ran)
	}
	c, ok := src.(prometheus.Collector)
	if !ok {
		t.Fatal("the source of an agent with Metrics is no prometheus.Collector")
	}
	if v := testutil.ToFloat64(c); v != 3 {
		t.Errorf("collected %v, want the agent's metric (3)", v)
	}
	if _, ok := hub.Source(a.New(Options{})).(prometheus.Collector); ok {
		t.Error("an AgentSource is a prometheus.Collector by itself")
	}
}

// registerAgent registers a for the test's length.
func registerAgent(t *testing.T, a *Agent) {
	t.Helper()
	RegisterAgent(a)
	t.Cleanup(func() {
		regMu.Lock()
		delete(regs, a.ID)
		regMu.Unlock()
	})
}
