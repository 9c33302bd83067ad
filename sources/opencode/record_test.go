package opencode

import (
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

// TestRejectedCallEndsTheTurn: opencode stops a turn when the user rejects
// a tool call; the step's message completes with finish tool-calls and no
// other message follows. Whether the part or the message is read first
// (the journal has the part first, a scan the message), the turn ends
// cancelled; a rejection with feedback lets the turn go on.
func TestRejectedCallEndsTheTurn(t *testing.T) {
	const rejectedText = "The user rejected permission to use this specific tool call."
	sess := Record{Session: &SessionInfo{ID: "ses_1", Directory: "/w"}}
	user := Record{Message: &MessageInfo{ID: "msg_1", SessionID: "ses_1", Role: "user"}}
	step := Record{Message: &MessageInfo{ID: "msg_2", SessionID: "ses_1", Role: "assistant", Completed: 9, Finish: "tool-calls"}}
	running := Record{Part: &PartInfo{ID: "prt_1", MessageID: "msg_2", SessionID: "ses_1", Type: "tool", Tool: "bash", Status: "running"}}
	failed := func(text string) Record {
		return Record{Part: &PartInfo{ID: "prt_1", MessageID: "msg_2", SessionID: "ses_1", Type: "tool", Tool: "bash", Status: "error", Error: text}}
	}
	for _, tc := range []struct {
		name string
		recs []Record
		want agentbridge.LastTurn // "" : the turn goes on
	}{
		{"journal order", []Record{sess, user, running, failed(rejectedText), step}, agentbridge.LastTurnInterrupted},
		{"scan order", []Record{sess, user, step, failed(rejectedText)}, agentbridge.LastTurnInterrupted},
		{"dismissed question", []Record{sess, user, running, failed("The user dismissed this question"), step}, agentbridge.LastTurnInterrupted},
		{"rejected with feedback", []Record{sess, user, running, failed("The user rejected permission to use this specific tool call with the following feedback: use ls"), step}, ""},
		{"a tool that failed", []Record{sess, user, running, failed("exit status 1"), step}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &folder{t: t, s: map[string]*fold.Session{}}
			m := NewMapper(f.view)
			for _, r := range tc.recs {
				f.add(m.Apply(r))
			}
			snap := f.s["ses_1"].Snapshot()
			if snap.LastTurn != tc.want || (tc.want == "") != (snap.Status == agentbridge.StatusRunning) {
				t.Errorf("status %s, last turn %q; want last turn %q", snap.Status, snap.LastTurn, tc.want)
			}
		})
	}
}

// TestMessageErrorIsTheTurnsError: an assistant message that completes
// with an error (an API, quota or auth error) ends the turn failed, and
// the error's message, from the JSON files or the database, is the
// snapshot's error.
func TestMessageErrorIsTheTurnsError(t *testing.T) {
	apiError := []byte(`{"id":"msg_2","sessionID":"ses_1","role":"assistant","time":{"created":5,"completed":9},
		"error":{"name":"APIError","data":{"message":"Insufficient balance or no resource package. Please recharge.","statusCode":402}}}`)
	r, ok := DecodeStorage("message", apiError)
	if !ok || r.Message.Error != "APIError" {
		t.Fatalf("DecodeStorage: %+v %v", r.Message, ok)
	}
	f, m := inTurn(t)
	f.apply(m, []Record{
		r,
	})
	snap := f.s["ses_1"].Snapshot()
	if snap.LastTurn != agentbridge.LastTurnFailed || snap.Error != "Insufficient balance or no resource package. Please recharge." {
		t.Errorf("last turn %q, error %q", snap.LastTurn, snap.Error)
	}
}

// TestNestedSubagentNamesItsParent: a subagent session a subagent started
// is listed under the root with parentId naming that subagent.
func TestNestedSubagentNamesItsParent(t *testing.T) {
	f, m := inTurn(t)
	f.apply(m, []Record{
		{Session: &SessionInfo{ID: "ses_2", ParentID: "ses_1", Directory: "/w", Title: "look around (@explore subagent)"}},
		{Session: &SessionInfo{ID: "ses_3", ParentID: "ses_2", Directory: "/w", Title: "dig deeper (@general subagent)"}},
	})
	subs := f.s["ses_1"].Snapshot().Subagents
	if len(subs) != 2 || subs[0].ID != "ses_2" || subs[0].ParentID != "" || subs[1].ID != "ses_3" || subs[1].ParentID != "ses_2" {
		t.Errorf("subagents %+v, want ses_2 under the root and ses_3 under ses_2", subs)
	}
	for _, s := range subs {
		if s.Type == "" {
			t.Errorf("subagent %s without a type", s.ID)
		}
	}
}

// TestToolsEndWithTheProcess: the bridge folds agent.exited when the
// agent's process ends, which closes its tools; the records never say
// so. A permission request logged afterwards is not placed on such a
// tool (which would show the ended session waiting, as if resumed), and
// the tool part's late completion maps to nothing.
func TestToolsEndWithTheProcess(t *testing.T) {
	f, m := inTurn(t)
	f.apply(m, []Record{
		{Part: &PartInfo{ID: "prt_1", MessageID: "msg_2", SessionID: "ses_1", Type: "tool", Tool: "bash", Status: "running", Started: 5}},
	})
	f.add([]Out{{"ses_1", agentbridge.Event{Kind: agentbridge.KindAgentExited, OccurredAt: 10}}})
	if out, ok := m.Ask(Ask{ID: "per_1", Permission: "bash", Session: "ses_1", At: 11}); ok || len(out) > 0 {
		t.Errorf("a request after the exit was placed: %+v", out)
	}
	if out := m.Apply(Record{Part: &PartInfo{ID: "prt_1", MessageID: "msg_2", SessionID: "ses_1", Type: "tool", Tool: "bash", Status: "completed"}}); len(out) > 0 {
		t.Errorf("the tool's completion after the exit maps to %+v, want nothing", out)
	}
	if f.s["ses_1"].Ended() == nil {
		t.Error("the session no longer shows as ended")
	}
}

// inTurn returns a folder and its Mapper, with root session ses_1 in a
// turn (user message msg_1).
func inTurn(t *testing.T) (*folder, *Mapper) {
	f := &folder{t: t, s: map[string]*fold.Session{}}
	m := NewMapper(f.view)
	f.apply(m, []Record{
		{Session: &SessionInfo{ID: "ses_1", Directory: "/w"}},
		{Message: &MessageInfo{ID: "msg_1", SessionID: "ses_1", Role: "user"}},
	})
	return f, m
}
