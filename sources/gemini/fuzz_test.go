package gemini

import (
	"bytes"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

// FuzzChat feeds any bytes, line by line, to the Gemini CLI chat mapper:
// it must not panic, and every event it reports (appended or replayed
// after a rebuild) must be one the fold takes. Input that begins with '#'
// is a chat recreated after its deletion (Continue); a line that begins
// with '!' is the head of a line too long to read (LongLine).
func FuzzChat(f *testing.F) {
	f.Add([]byte(`{"sessionId":"s1","startTime":"2026-01-01T00:00:00Z","kind":"main"}` + "\n" +
		`{"id":"u1","type":"user","content":[{"text":"hi"}]}` + "\n" + `{"$rewindTo":"u1"}` + "\n"))
	f.Add([]byte(`{"sessionId":"s1","startTime":"2026-01-01T00:00:00Z","kind":"main"}` + "\n" +
		`!{"id":"u1","type":"user","content":[{"text":"a pasted \u00e9 file` + "\n" +
		`{"id":"g1","type":"gemini","content":"reading","model":"m"}` + "\n" +
		`!{"id":"g1","type":"gemini","content":"reading","model":"m","toolCalls":[{"id":"t1","name":"read_file","args":{"p":"` + "\n"))
	f.Add([]byte("#\n" + `{"id":"u1","type":"user","content":[{"text":"hi"}]}` + "\n" + `{"id":"g1","type":"gemini","content":"ok"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Chat{}
		if len(data) > 0 && data[0] == '#' {
			c.Continue(chatMeta{SessionID: "s1"})
		}
		s := fold.NewSession("s1", HarnessGemini)
		for _, line := range bytes.Split(data, []byte("\n")) {
			var ch Change
			var events []agentbridge.Event
			if len(line) > 0 && line[0] == '!' {
				ch, events = c.LongLine(line[1:])
			} else {
				ch, events, _ = c.Line(line)
			}
			if ch == Rebuilt {
				s = fold.NewSession("s1", HarnessGemini)
				events = c.Events()
			}
			for _, e := range events {
				if issues := s.Apply(e); len(issues) > 0 {
					t.Fatalf("fold rejected %+v: %+v", e, issues)
				}
			}
		}
	})
}

// FuzzBrain does the same for the Antigravity transcript mapper.
func FuzzBrain(f *testing.F) {
	f.Add([]byte(`{"step_index":0,"source":"USER_EXPLICIT","type":"USER_INPUT","status":"DONE","content":"x"}` + "\n" +
		`{"step_index":1,"source":"MODEL","type":"PLANNER_RESPONSE","status":"DONE","content":"y"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := &Brain{}
		s := fold.NewSession("c1", HarnessAntigravity)
		for _, line := range bytes.Split(data, []byte("\n")) {
			events, _ := b.Line("c1", line)
			for _, e := range events {
				if issues := s.Apply(e); len(issues) > 0 {
					t.Fatalf("fold rejected %+v: %+v", e, issues)
				}
			}
		}
	})
}
