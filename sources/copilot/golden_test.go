package copilot

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenInputs returns every journal the golden tests map, by name: the
// hand-written ones in testdata/journals and each session's journal cut
// from the recordings in testdata/irrlicht.
func goldenInputs(t *testing.T) map[string][]byte {
	t.Helper()
	in := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join("testdata", "journals", "*.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in[strings.TrimSuffix(filepath.Base(f), ".jsonl")] = b
	}
	dirs, _ := filepath.Glob(filepath.Join("testdata", "irrlicht", "*-*"))
	for _, dir := range dirs {
		sc, err := sourcestest.LoadScenario(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, rec := range sc.Recordings {
			js, err := splitJournals(rec.Transcript)
			if err != nil {
				t.Fatal(err)
			}
			for j, f := range js {
				in[strings.Join([]string{"irrlicht", sc.Name[:3], itoa(i), itoa(j)}, "-")] = f.Data
			}
		}
	}
	if len(in) < 20 {
		t.Fatalf("found %d journals, want at least 20", len(in))
	}
	return in
}

func itoa(i int) string { return string(rune('0' + i)) }

// TestGolden maps each journal, line by line, and compares the events of
// every line and the final snapshot with testdata/golden/<name>.json
// (-update rewrites them); an event the fold refuses fails it.
func TestGolden(t *testing.T) {
	for name, data := range goldenInputs(t) {
		t.Run(name, func(t *testing.T) {
			m := &mapper{session: "s-" + name}
			got := sourcestest.MapLines(t, sourcestest.Mapper{Viewed: m.Map}, "s-"+name, Harness, data, nil)
			sourcestest.Golden(t, filepath.Join("testdata", "golden", name+".json"), got, *update)
		})
	}
}

// handled lists every record type the journals hold and what the mapping
// does with it; a type found in a journal but missing here fails
// TestEveryRecordType, so a new type in the corpus is a decision, not an
// accident.
var handled = map[string]string{
	typeSessionStart:     "session.started",
	typeSessionResume:    "session.started (a new process took the session up)",
	typeSessionShutdown:  "agent.exited",
	typeSessionError:     "agent.done error",
	typeTitleChanged:     "agent.metadata title",
	typeModelChange:      "agent.metadata model (not the placeholder auto)",
	typeAutoModeResolved: "agent.metadata model",
	typeContextChanged:   "session.started cwd",
	typeCompactionStart:  "turn.started when no turn is open",
	typeCompactionDone:   "agent.done of the turn a compaction opened",
	typeUserMessage:      "turn.started",
	typeTurnStart:        "turn.started when no turn is open",
	typeAssistantMessage: "agent.metadata model; whether the model asked for tools",
	typeTurnEnd:          "agent.done success when the model asked for nothing more",
	typeAbort:            "agent.done cancelled",
	typeToolStart:        "tool.started (+ wait.started for ask_user, exit_plan_mode)",
	typeToolComplete:     "tool.finished",
	typeSubagentStarted:  "subagent.started",
	typeSubagentDone:     "subagent.done success",
	typeSubagentFailed:   "subagent.done error",
	typePermRequested:    "wait.started",
	typePermCompleted:    "wait.finished",
	typeInputRequested:   "wait.started",
	typeInputCompleted:   "wait.finished",
	typeElicitRequested:  "wait.started",
	typeElicitCompleted:  "wait.finished",
	typePlanRequested:    "wait.started",
	typePlanCompleted:    "wait.finished",
	typeOAuthRequired:    "wait.started",
	typeOAuthCompleted:   "wait.finished",

	typeUsageRecord:               "agent.metadata",
	"system.message":              "ignored: the system prompt",
	"system.notification":         "ignored: the turn it starts says it",
	"session.permissions_changed": "ignored",
	"session.usage_checkpoint":    "ignored: billing",
	"session.info":                "ignored",
	"session.warning":             "ignored",
	"session.handoff":             "ignored",
	"tool.user_requested":         "ignored: a `!` shell escape, not the agent",
	"some.future_type":            "ignored: unknown types cost nothing",
}

// TestEveryRecordType checks that every record type of the golden
// journals (the recordings included) is in handled, and that the mapped
// types are all exercised by some journal.
func TestEveryRecordType(t *testing.T) {
	seen := map[string]bool{}
	for _, data := range goldenInputs(t) {
		for _, line := range bytes.Split(data, []byte("\n")) {
			var r struct{ Type any }
			if json.Unmarshal(line, &r) == nil {
				if s, ok := r.Type.(string); ok {
					seen[s] = true
				}
			}
		}
	}
	for typ := range seen {
		if _, ok := handled[typ]; !ok {
			t.Errorf("record type %q is in a journal but not in handled: decide what it means", typ)
		}
	}
	for typ := range handled {
		if !seen[typ] {
			t.Errorf("record type %q is handled but no journal has it", typ)
		}
	}
	if !seen[typePermRequested] {
		t.Error("no journal asks for a permission")
	}
}
