package codex

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// realRollout is a recorded Codex 0.118.0 session (testdata/SOURCES.md).
const realRollout = "testdata/rollouts/current-many-tools/rollout-many-tools.jsonl"

func drifts(h *hub.Hub) []agentbridge.Diagnostic {
	var out []agentbridge.Diagnostic
	for _, d := range h.Diagnostics() {
		if d.Diagnostic.Code == agentbridge.CodeFormatDrift {
			out = append(out, d.Diagnostic)
		}
	}
	return out
}

func harnessState(t *testing.T, h *hub.Hub) agentbridge.HarnessState {
	t.Helper()
	st, ok := h.Source(ID)
	if !ok {
		t.Fatal("no codex source")
	}
	i := slices.IndexFunc(st.Harnesses, func(hs agentbridge.HarnessState) bool { return hs.ID == Harness })
	if i < 0 {
		t.Fatal("no codex harness")
	}
	return st.Harnesses[i]
}

// TestDriftCanary: a recorded rollout after a synthetic format change (a
// renamed record type, a moved field) raises one format-drift diagnostic
// in the one read of it, naming kinds only, counted in the metric. (The
// diagnostic of a read comes before its sessions: a start-up scan's before
// its reset.)
func TestDriftCanary(t *testing.T) {
	t.Parallel()
	real, err := os.ReadFile(realRollout)
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]*strings.Replacer{
		"renamed record type": strings.NewReplacer(`"type":"event_msg"`, `"type":"event_message"`, `"type":"response_item"`, `"type":"response_entry"`),
		"moved field": strings.NewReplacer(`"type":"event_msg","payload":`, `"type":"event_msg","body":`,
			`"type":"response_item","payload":`, `"type":"response_item","body":`),
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			sourcestest.Append(t, filepath.Join(home, "sessions", "2026", "04", "08", "rollout-2026-04-08T22-26-33-019d6f34-5400-7351-9296-89e2962b53b8.jsonl"), change.Replace(string(real)))
			var clock sourcestest.Clock
			reg := prometheus.NewRegistry()
			r := sourcestest.RunReal(t, New(Options{Home: home}), &clock, hub.Options{Registry: reg})
			r.WaitFor(t, "the session", func(h *hub.Hub) bool { _, ok := r.Entry("019d6f34-5400-7351-9296-89e2962b53b8"); return ok })
			d := drifts(r.Hub)
			if len(d) != 1 {
				t.Fatalf("got %d format-drift diagnostics, want one: %v", len(d), d)
			}
			for _, leak := range []string{"/Users", home, "irrlicht", "Codex"} {
				if strings.Contains(d[0].Message, leak) {
					t.Errorf("the diagnostic %q names %q: kinds only, no content or paths", d[0].Message, leak)
				}
			}
			const metric = `# HELP agentbridge_format_drift_total format-drift diagnostics raised, by source: an agent's journal stopped making sense (unknown record kinds, a session with records but no recognised turn).
# TYPE agentbridge_format_drift_total counter
agentbridge_format_drift_total{source="codex"} 1
`
			if err := testutil.GatherAndCompare(reg, strings.NewReader(metric), "agentbridge_format_drift_total"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestVersionsSeenAndTested: GET /v1/sources lists the cli_version of a
// recorded rollout beside the range the live suite tested, and the
// rollout raises no format-drift.
func TestVersionsSeenAndTested(t *testing.T) {
	t.Parallel()
	real, err := os.ReadFile(realRollout)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	sourcestest.Append(t, filepath.Join(home, "sessions", "2026", "04", "08", "rollout-2026-04-08T22-26-33-019d6f34-5400-7351-9296-89e2962b53b8.jsonl"), string(real))
	var clock sourcestest.Clock
	r := sourcestest.RunReal(t, New(Options{Home: home}), &clock, hub.Options{Tested: sources.Tested})
	r.WaitFor(t, "the session", func(h *hub.Hub) bool { _, ok := r.Entry("019d6f34-5400-7351-9296-89e2962b53b8"); return ok })
	if d := drifts(r.Hub); len(d) > 0 {
		t.Errorf("a real rollout raised %v", d)
	}
	hs := harnessState(t, r.Hub)
	if !slices.Equal(hs.VersionsSeen, []string{"0.118.0"}) || hs.Tested == nil || *hs.Tested != sources.Tested[Harness] {
		t.Errorf("harness state %+v (tested %v), want versionsSeen [0.118.0] and the tested range %v", hs, hs.Tested, sources.Tested[Harness])
	}
}

// TestRecordedRolloutsRaiseNoDrift: no rollout of a real Codex version in
// testdata (0.9x to 0.171, the oldest bare format included) raises
// format-drift.
func TestRecordedRolloutsRaiseNoDrift(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "rollouts", "*"))
	if len(dirs) < 10 {
		t.Fatalf("found %d recorded rollout sets", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				sourcestest.Append(t, filepath.Join(home, "sessions", "2026", "01", "01", filepath.Base(f)), string(b))
			}
			h := sourcestest.Start(t, New(Options{Home: home}), nil)
			for _, d := range h.Diagnostics() {
				if d.Code == agentbridge.CodeFormatDrift {
					t.Errorf("raised %q", d.Message)
				}
			}
		})
	}
}
