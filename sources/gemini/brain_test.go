package gemini

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
)

// recordedSteps returns the steps of a recorded Antigravity conversation
// by step_index.
func recordedSteps(t *testing.T, scenario string) map[int][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "irrlicht", "antigravity", scenario, "recordings", "run", "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	steps := map[int][]byte{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var s struct {
			StepIndex int `json:"step_index"`
		}
		if json.Unmarshal(line, &s) == nil && len(line) > 0 {
			steps[s.StepIndex] = line
		}
	}
	return steps
}

// A planner response with neither text nor a tool call (only thinking) is
// no reply: Antigravity refuses it ("model output must contain either
// output text or tool calls, these cannot both be empty, please try
// again") and asks the model again. The steps are a real recording's (the
// foreground-subagent run, where it happened twice, here without its
// subagent steps): through the empty responses and the error the turn goes
// on; the reply with text that follows (a real one, of the session-start
// run) ends it.
func TestEmptyPlannerResponseIsRetried(t *testing.T) {
	steps := recordedSteps(t, "3-1_foreground-subagent")
	reply := recordedSteps(t, "1-1_session-start")[3]
	b := &Brain{}
	for _, i := range []int{0, 1, 2, 7, 8, 9, 10} {
		line, ok := steps[i]
		if !ok {
			t.Fatalf("step %d not recorded", i)
		}
		events, code := b.Line("parent", line)
		if code != "" {
			t.Fatalf("step %d: %s", i, code)
		}
		for _, e := range events {
			if e.Kind == agentbridge.KindAgentDone {
				t.Errorf("step %d ended the turn: %+v", i, e)
			}
		}
		if i > 0 && b.Done() {
			t.Errorf("after step %d the turn is over; want it going on", i)
		}
	}
	events, _ := b.Line("parent", reply)
	if len(events) == 0 || events[len(events)-1].Kind != agentbridge.KindAgentDone || !b.Done() {
		t.Errorf("the reply with text: %+v, done %v; want the turn's end", events, b.Done())
	}
}
