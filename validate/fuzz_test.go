package validate

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Seed corpora live in testdata/fuzz/<Name>/; plain go test runs them.

var knownCodes = setOf(func() []string {
	var out []string
	for _, c := range Codes {
		out = append(out, string(c))
	}
	return out
}())

// checkWellFormed asserts the form of every issue: a path from "$", a code
// of the contract and a message.
func checkWellFormed(tb testing.TB, call string, is []Issue) {
	tb.Helper()
	for _, i := range is {
		if !strings.HasPrefix(i.Path, "$") || !knownCodes[string(i.Code)] || i.Message == "" {
			tb.Fatalf("%s: malformed issue %+v", call, i)
		}
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s, is := DecodeSnapshot(data, nil)
		checkWellFormed(t, "DecodeSnapshot", is)
		if len(is) > 0 {
			return
		}
		if typed := Snapshot(s, nil); len(typed) != 0 {
			t.Fatalf("DecodeSnapshot accepted what Snapshot rejects: %v", typed)
		}
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		s2, is2 := DecodeSnapshot(raw, Harnesses{s.Harness: true})
		if len(is2) != 0 {
			t.Fatalf("re-encoded snapshot %s rejected: %v", raw, is2)
		}
		if diff := cmp.Diff(s, s2, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
		// What the bridge takes, with a pid and a cwd, the host takes.
		if s.PID == 0 {
			s.PID = 1
		}
		if s.Cwd == "" {
			s.Cwd = "/"
		}
		if is := SnapshotAs(s, Harnesses{s.Harness: true}, Host); len(is) != 0 {
			t.Fatalf("the host refuses %+v that the bridge takes: %v", s, is)
		}
		_, his := DecodeSnapshotAs(data, nil, Host)
		checkWellFormed(t, "DecodeSnapshotAs(Host)", his)
	})
}

func FuzzDecodeReset(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, is := DecodeReset(data, nil)
		checkWellFormed(t, "DecodeReset", is)
		if len(is) > 0 {
			return
		}
		if typed := Reset(ss, nil); len(typed) != 0 {
			t.Fatalf("DecodeReset accepted what Reset rejects: %v", typed)
		}
		raw, err := json.Marshal(ss)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		ss2, is2 := DecodeReset(raw, nil)
		if len(is2) != 0 {
			t.Fatalf("re-encoded reset %s rejected: %v", raw, is2)
		}
		if diff := cmp.Diff(ss, ss2, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}

func FuzzDecodeDiagnostic(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		d, is := DecodeDiagnostic(data)
		checkWellFormed(t, "DecodeDiagnostic", is)
		if len(is) > 0 {
			return
		}
		if typed := Diagnostic(d); len(typed) != 0 {
			t.Fatalf("DecodeDiagnostic accepted what Diagnostic rejects: %v", typed)
		}
		raw, _ := json.Marshal(d)
		if d2, is2 := DecodeDiagnostic(raw); len(is2) != 0 || d2 != d {
			t.Fatalf("round trip of %s: %+v, %v", raw, d2, is2)
		}
		r := d
		RedactDiagnostic(&r)
		if is := Diagnostic(r); len(is) != 0 {
			t.Fatalf("RedactDiagnostic made %+v invalid: %v", r, is)
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		e, is := DecodeEvent(data)
		checkWellFormed(t, "DecodeEvent", is)
		if len(is) > 0 {
			return
		}
		if typed := Event(e); len(typed) != 0 {
			t.Fatalf("DecodeEvent accepted what Event rejects: %v", typed)
		}
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		e2, is2 := DecodeEvent(raw)
		if len(is2) != 0 {
			t.Fatalf("re-encoded event %s rejected: %v", raw, is2)
		}
		if diff := cmp.Diff(e, e2); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
		r := e
		RedactEvent(&r)
		if is := Event(r); len(is) != 0 {
			t.Fatalf("RedactEvent made %+v invalid: %v", r, is)
		}
	})
}

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
				var is []Issue
				if e, is = DecodeEvent(line); len(is) > 0 {
					continue
				}
			}
			before := s.Clone()
			is := s.Apply(e)
			checkWellFormed(t, "Apply", is)
			if len(is) > 0 {
				if diff := cmp.Diff(before, s, sessionCmp, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("rejected %s changed the session:\n%s", line, diff)
				}
				continue
			}
			if is := Snapshot(s.Snapshot(), nil); len(is) != 0 {
				t.Fatalf("after %s the snapshot %+v is invalid: %v", line, s.Snapshot(), is)
			}
			snap := s.Snapshot()
			RedactSnapshot(&snap)
			if is := Snapshot(snap, nil); len(is) != 0 {
				t.Fatalf("RedactSnapshot made %+v invalid: %v", snap, is)
			}
			// a live session (pid and cwd known) is one the host takes
			snap.PID = max(snap.PID, 1)
			if snap.Cwd == "" {
				snap.Cwd = "/"
			}
			if is := SnapshotAs(snap, nil, Host); len(is) != 0 {
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

func FuzzBound(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, max int) {
		if got := Bound(s, math.MaxInt); got != Bound(s, len(s)+1) {
			t.Fatalf("Bound(%q, MaxInt) = %q, want no cut", s, got)
		}
		if got := Bound(s, math.MinInt); got != "" {
			t.Fatalf("Bound(%q, MinInt) = %q, want empty", s, got)
		}
		max = max%1100 - 50 // keep max small, negatives included
		checkBounded(t, s, max, Bound(s, max))
	})
}

func FuzzRedact(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		r := Redact(s)
		if utf8.ValidString(s) && !utf8.ValidString(r) {
			t.Fatalf("Redact(%q) = %q: not valid UTF-8", s, r)
		}
		if !mayHoldSecret(s) && r != s {
			t.Fatalf("Redact changed %q without a trigger word", s)
		}
		if again := Redact(r); again != r {
			t.Fatalf("Redact is not idempotent: %q -> %q -> %q", s, r, again)
		}
		var ev agentbridge.Event
		ev.Kind, ev.Summary = agentbridge.KindAgentDone, Bound(s, MaxText)
		RedactEvent(&ev)
		if ev.Summary != "" && !ValidText(ev.Summary, MaxText) {
			t.Fatalf("RedactEvent made the summary invalid: %q", ev.Summary)
		}
	})
}
