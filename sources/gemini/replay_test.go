package gemini

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
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
	// Phases a scenario's recording cannot show, with why.
	unseen := map[string][]string{
		// The recording stops before the turn's reply: its last record is
		// a tool's result. The ready its authors expect is what their
		// daemon made of a reply's preamble, written before its tool calls
		// (README, known limits); the replay must end running instead
		// (TestLongToolCallLine).
		"gemini-cli/2-16_oversized-transcript-line": {"turn_end"},
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
			sc.Phases = kittest.Drop(sc.Phases, unseen[name])
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

// TestLongToolCallLine replays a real chat whose longest line (9.8 KB, a
// reply's shell call with its result and rendered output) is the one that
// says the turn goes on: the reply's preamble was written first with no
// tool call, and looked finished. Cut right after that line and at the
// end of the recording (a tool's result, the next reply not written yet),
// the session is running with no turn ended. It does so with the line
// read, and with the bound on a line lowered below it (a line far larger
// than any other: the tailer skips it, counted as line-too-long, and the
// head of it that names the reply's tool call is enough).
func TestLongToolCallLine(t *testing.T) {
	sc, err := sourcestest.LoadScenario(filepath.Join("testdata", "irrlicht", "gemini-cli", "2-16_oversized-transcript-line"))
	if err != nil {
		t.Fatal(err)
	}
	rec := sc.Recordings[0]
	var longest, size, second int64 // the end of the longest line, its length, the next longest
	for off, prev := 0, 0; off < len(rec.Transcript); prev = off {
		off += bytes.IndexByte(rec.Transcript[off:], '\n') + 1
		switch n := int64(off - prev); {
		case n > size:
			longest, size, second = int64(off), n, size
		case n > second:
			second = n
		}
	}
	for _, maxLine := range []int{0, int(second+size) / 2} {
		r := sourcestest.Replay{
			New: func(home string) hub.Source {
				return New(sources.Options{Home: home, MaxLine: maxLine, Processes: proctest.Unseen(t)})
			},
			Path:    func(_, recorded string) string { return sourcestest.After(recorded, ".gemini") },
			Enabled: []string{HarnessGemini},
			Split:   splitChats,
		}
		for _, cut := range []int64{longest, int64(len(rec.Transcript))} {
			part := &sourcestest.Recording{Name: rec.Name, Transcript: rec.Transcript[:cut]}
			for _, g := range rec.Growth {
				if g.Size <= cut {
					part.Growth = append(part.Growth, g)
				}
			}
			h := r.Run(t, part)
			snaps := h.Snapshots()
			if len(snaps) != 1 {
				t.Fatalf("bound %d, cut at %d: %d sessions, want 1", maxLine, cut, len(snaps))
			}
			if s := snaps[0]; s.Status != agentbridge.StatusRunning || s.LastTurn != "" || s.LastTurnEndedAt != 0 {
				t.Errorf("bound %d, cut at %d (the longest line: %d bytes): status %s, last turn %q ended %d; want running, no turn ended",
					maxLine, cut, size, s.Status, s.LastTurn, s.LastTurnEndedAt)
			}
			skipped := false
			for _, d := range h.Diagnostics() {
				skipped = skipped || d.Code == sources.CodeLineTooLong
			}
			if skipped != (maxLine != 0) {
				t.Errorf("bound %d, cut at %d: line-too-long reported %v, want %v", maxLine, cut, skipped, maxLine != 0)
			}
		}
	}
}
