package fold

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
	"github.com/agentbridge/agentbridge/validate/validatetest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Seed corpora live in testdata/fuzz/<Name>/; plain go test runs them.

// FuzzFold applies a sequence of events, one per line, to a new session: a
// rejected event changes nothing, and the snapshot always passes Snapshot.
// A line is a JSON event; a line that does not start with "{" is a compact
// event (see compactEvent), so that the fuzzer reaches deep states (many
// waits, tools and subagents) without having to invent JSON.
func FuzzFold(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s := NewSession("sess-1", "example-agent")
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			var e agentbridge.Event
			if len(line) > 0 && line[0] != '{' {
				e = compactEvent(line)
			} else {
				var is []validate.Issue
				if e, is = validate.DecodeEvent(line); len(is) > 0 {
					continue
				}
			}
			before := s.Clone()
			is := s.Apply(e)
			validatetest.WellFormed(t, "Apply", is, validate.Codes)
			if len(is) > 0 {
				if diff := cmp.Diff(before, s, sessionCmp, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("rejected %s changed the session:\n%s", line, diff)
				}
				continue
			}
			if is := validate.Snapshot(s.Snapshot(), nil); len(is) != 0 {
				t.Fatalf("after %s the snapshot %+v is invalid: %v", line, s.Snapshot(), is)
			}
			snap := s.Snapshot()
			validate.RedactSnapshot(&snap)
			if is := validate.Snapshot(snap, nil); len(is) != 0 {
				t.Fatalf("RedactSnapshot made %+v invalid: %v", snap, is)
			}
			// a live session (pid and cwd known) is one the host takes
			snap.PID = max(snap.PID, 1)
			if snap.Cwd == "" {
				snap.Cwd = "/"
			}
			if is := validate.SnapshotAs(snap, nil, validate.Host); len(is) != 0 {
				t.Fatalf("after %s the host refuses %+v: %v", line, snap, is)
			}
		}
	})
}

// compactEvent makes an event from b: b[0] picks the kind, b[1] an id (one
// of 256), b[2] an outcome, state, pid or time, and the rest is the kind's
// text (title, prompt, reason), which may well be invalid.
func compactEvent(b []byte) agentbridge.Event {
	at := func(i int) byte {
		if i < len(b) {
			return b[i]
		}
		return 0
	}
	kinds := agentbridge.EventKinds
	e := agentbridge.Event{Kind: kinds[int(at(0))%len(kinds)]}
	id := "x" + strconv.Itoa(int(at(1)))
	outcome := []agentbridge.Outcome{"success", "error", "cancelled"}[int(at(2))%3]
	var text string
	if len(b) > 3 {
		text = string(b[3:])
	}
	switch e.Kind {
	case agentbridge.KindSessionStarted:
		e.Title, e.PID = text, int(at(2))
	case agentbridge.KindAgentMetadata:
		e.PromptText, e.Model = text, text
	case agentbridge.KindTurnStarted:
		e.TurnID, e.PromptText = id, text
	case agentbridge.KindToolStarted:
		e.ToolID, e.Name = id, "Bash"
	case agentbridge.KindToolFinished:
		e.ToolID, e.Outcome = id, outcome
	case agentbridge.KindWaitStarted:
		e.WaitID, e.State, e.Reason = id, []agentbridge.Status{"waiting", "blocked"}[at(2)%2], text
	case agentbridge.KindWaitFinished:
		e.WaitID = id
	case agentbridge.KindAgentDone:
		e.Outcome, e.OccurredAt = outcome, int64(at(2))
	case agentbridge.KindSubagentStarted:
		e.SubagentID, e.ParentAgentID, e.Title = id, "root", text
	case agentbridge.KindSubagentDone:
		e.SubagentID, e.Outcome = id, outcome
	case agentbridge.KindSessionStopped:
		e.Reason = text
	}
	return e
}
