package gemini

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// replayed is a session file mapped and folded: the golden, and what a
// user is shown (sourcestest.ShownStatus), which the golden file does not
// hold.
type replayed struct {
	sourcestest.LineGolden
	Shown agentbridge.Status
}

// session is one session's lines, cut out of a recording that holds
// several files one after the other.
type session struct {
	name  string
	lines [][]byte
}

// split cuts a recording into its files: a Gemini CLI chat starts with a
// metadata line, an Antigravity transcript with step 0.
func split(harness string, data []byte) []session {
	var out []session
	for _, line := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		first := false
		if harness == HarnessGemini {
			var m struct {
				SessionID string `json:"sessionId"`
				ID        string `json:"id"`
			}
			first = json.Unmarshal(line, &m) == nil && m.SessionID != "" && m.ID == ""
		} else {
			var s struct {
				StepIndex *int `json:"step_index"`
			}
			first = json.Unmarshal(line, &s) == nil && s.StepIndex != nil && *s.StepIndex == 0
		}
		if first || len(out) == 0 {
			out = append(out, session{})
		}
		out[len(out)-1].lines = append(out[len(out)-1].lines, line)
	}
	for i := range out {
		out[i].name = "s" + string(rune('1'+i))
	}
	return out
}

// mapper maps one session file the way the source does: a Gemini CLI
// chat (whose rewrite rebuilds the session from the chat's events) or an
// Antigravity transcript.
func mapper(harness, id string) sourcestest.Mapper {
	if harness != HarnessGemini {
		brain := &Brain{}
		return sourcestest.Mapper{Line: func(line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
			evs, code := brain.Line(id, line)
			return append(out, evs...), code
		}}
	}
	chat, rebuilt := &Chat{}, false
	return sourcestest.Mapper{
		Line: func(line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
			ch, evs, code := chat.Line(line)
			switch ch {
			case Appended:
				out = append(out, evs...)
			case Rebuilt:
				rebuilt = true
				out = append(out, chat.Events()...)
			}
			return out, code
		},
		Rebuilt: func() bool {
			r := rebuilt
			rebuilt = false
			return r
		},
	}
}

// replayFile maps one session's lines the way the source does and folds
// the events (sourcestest.MapSession), failing on an event the fold
// rejects.
func replayFile(t *testing.T, harness, id string, lines [][]byte) replayed {
	t.Helper()
	g, s := sourcestest.MapSession(t, mapper(harness, id), id, harness, bytes.Join(lines, []byte("\n")), nil)
	return replayed{LineGolden: g, Shown: sourcestest.ShownStatus(&g.Snapshot, s.Ended())}
}

// goldenCases lists every recorded file under testdata with its harness.
func goldenCases(t *testing.T) map[string]struct {
	harness string
	lines   [][]byte
} {
	t.Helper()
	cases := map[string]struct {
		harness string
		lines   [][]byte
	}{}
	add := func(name, harness string, data []byte) {
		for _, s := range split(harness, data) {
			cases[name+"__"+s.name] = struct {
				harness string
				lines   [][]byte
			}{harness, s.lines}
		}
	}
	chats, _ := filepath.Glob("testdata/chats/*.jsonl")
	for _, p := range chats {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		add("chats__"+strings.TrimSuffix(filepath.Base(p), ".jsonl"), HarnessGemini, data)
	}
	recs, _ := filepath.Glob("testdata/irrlicht/*/*/recordings/*/transcript.jsonl")
	for _, p := range recs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		scenario := filepath.Dir(filepath.Dir(filepath.Dir(p)))
		agent := filepath.Base(filepath.Dir(scenario))
		harness := HarnessGemini
		if agent == "antigravity" {
			harness = HarnessAntigravity
		}
		add(agent+"__"+filepath.Base(scenario), harness, data)
	}
	if len(cases) < 10 {
		t.Fatalf("only %d recorded files under testdata", len(cases))
	}
	return cases
}

// TestGolden maps every recorded file, line by line, and compares the
// events of every line and the final snapshot with
// testdata/golden/<name>.json (-update rewrites them).
func TestGolden(t *testing.T) {
	for name, c := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			got := replayFile(t, c.harness, "sess-1", c.lines)
			sourcestest.Golden(t, filepath.Join("testdata", "golden", name+".json"), got.LineGolden, *update)
		})
	}
}

// What the recordings must show, whatever the goldens say: every Gemini CLI
// session with a prompt ends its turn; the rewind scenario's snapshot keeps
// the first prompt's title; every Antigravity turn that got a reply ends.
func TestRecordedOutcomes(t *testing.T) {
	for name, c := range goldenCases(t) {
		g := replayFile(t, c.harness, "sess-1", c.lines)
		turns := 0
		for _, e := range g.AllEvents() {
			if e.Kind == agentbridge.KindTurnStarted {
				turns++
			}
		}
		if turns == 0 {
			continue
		}
		if strings.Contains(name, "3-") && c.harness == HarnessAntigravity {
			continue // subagent scenarios: the children's own transcripts were not recorded
		}
		// killed mid-turn: the turn never ended, and no reply named a model
		killed := strings.Contains(name, "1-2_session-end__s3") || strings.Contains(name, "3-4_subagent-orphan-cleanup")
		if killed {
			if g.Snapshot.Status != agentbridge.StatusRunning {
				t.Errorf("%s: status %s, want running (killed mid-turn)", name, g.Snapshot.Status)
			}
			continue
		}
		// the recording stops at a tool's result, before the next reply
		if strings.Contains(name, "2-16_oversized-transcript-line") {
			if g.Shown != agentbridge.StatusRunning || g.Snapshot.Model == "" {
				t.Errorf("%s: status %s, model %q; want running with a model (the turn goes on)", name, g.Shown, g.Snapshot.Model)
			}
			continue
		}
		if g.Shown != sourcestest.StatusDone {
			t.Errorf("%s: status %s after %d turns, want done", name, g.Shown, turns)
		}
		if g.Snapshot.Model == "" {
			t.Errorf("%s: no model", name)
		}
		if g.Snapshot.Title == "" {
			t.Errorf("%s: no title", name)
		}
	}
}

// TestErrorRecordIsTheTurnsError: an error record ends the turn failed,
// and its content (what Gemini CLI showed: an API, quota or auth error)
// is the snapshot's error, redacted.
func TestErrorRecordIsTheTurnsError(t *testing.T) {
	lines := [][]byte{
		[]byte(`{"sessionId":"sess-1","projectHash":"h","startTime":"2026-04-29T21:39:22.319Z","lastUpdated":"2026-04-29T21:39:22.319Z","kind":"main"}`),
		[]byte(`{"id":"u1","timestamp":"2026-04-29T21:39:33.155Z","type":"user","content":[{"text":"hi"}]}`),
		[]byte(`{"id":"e1","timestamp":"2026-04-29T21:39:35.125Z","type":"error","content":"[API Error: You exceeded your current quota (key AIzaSyA1234567890abcdefghijklmnopqrstuv)]"}`),
	}
	g := replayFile(t, HarnessGemini, "sess-1", lines)
	want := "[API Error: You exceeded your current quota (key [redacted])]"
	if g.Snapshot.LastTurn != agentbridge.LastTurnFailed || g.Snapshot.Error != want {
		t.Errorf("lastTurn %q error %q, want failed %q", g.Snapshot.LastTurn, g.Snapshot.Error, want)
	}
}
