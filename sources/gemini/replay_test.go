package gemini

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// A Gemini CLI chat begins with its metadata line; the recorder knows the
// session by the file's name, session-<start to the minute>-<id8>, which
// that line gives too.
var splitChats = sourcestest.SplitAt(func(line []byte) (string, bool) {
	var m struct {
		SessionID string `json:"sessionId"`
		StartTime string `json:"startTime"`
		ID        string `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil || m.SessionID == "" || m.ID != "" || len(m.StartTime) < 16 || len(m.SessionID) < 8 {
		return "", false
	}
	return "session-" + strings.ReplaceAll(m.StartTime[:16], ":", "-") + "-" + m.SessionID[:8], true
})

// TestRecordedScenarios replays the recordings of real Gemini CLI and
// Antigravity CLI sessions into the live source, by the byte offsets they
// grew at, and checks the states their authors expect, strictly. The
// scenarios whose recordings lack what they need are listed with why.
func TestRecordedScenarios(t *testing.T) {
	lacking := map[string]string{
		// The subagents' own conversations were not recorded, so their end
		// (which ends the parent's turn) cannot be seen.
		"antigravity/3-1_foreground-subagent":     "child transcripts not recorded",
		"antigravity/3-2_background-subagent":     "child transcripts not recorded",
		"antigravity/3-4_subagent-orphan-cleanup": "child transcripts not recorded",
		"antigravity/3-5_workflow-fanout":         "child transcripts not recorded",
		// Phases about a subagent chat the recorder did not capture.
		"gemini-cli/3-4_subagent-orphan-cleanup": "the subagent's chat was not recorded",
		// The other agent's transcript (Claude Code or Codex) was not recorded.
		"antigravity/4-2_multiple-agents-same-workspace": "the other agent's transcript was not recorded",
		"gemini-cli/4-2_multiple-agents-same-workspace":  "the other agent's transcript was not recorded",
	}
	dirs, _ := filepath.Glob("testdata/irrlicht/*/*")
	if len(dirs) < 20 {
		t.Fatalf("only %d recorded scenarios under testdata/irrlicht", len(dirs))
	}
	for _, dir := range dirs {
		if filepath.Base(dir) == "LICENSE" {
			continue
		}
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			if why, ok := lacking[name]; ok {
				t.Skip(why)
			}
			sc, err := sourcestest.LoadScenario(dir)
			if err != nil {
				t.Fatal(err)
			}
			r := sourcestest.Replay{
				// The recordings hold no processes: none is looked for.
				New:  func(home string) hub.Source { return New(sources.Options{Home: home, Processes: proctest.Unseen(t)}) },
				Path: func(_, recorded string) string { return sourcestest.After(recorded, ".gemini") },
			}
			if strings.HasPrefix(name, "antigravity/") {
				r.Enabled = []string{HarnessAntigravity}
				for _, rec := range sc.Recordings {
					r := r
					r.Split = kittest.SplitBySize(rec, func(recorded string) bool { return strings.Contains(recorded, "/antigravity-cli/brain/") })
					r.Check(t, &sourcestest.Scenario{Name: sc.Name, Phases: sc.Phases, Recordings: []*sourcestest.Recording{rec}})
				}
				return
			}
			r.Enabled = []string{HarnessGemini}
			r.Split = splitChats
			r.Check(t, sc)
		})
	}
}
