package gemini

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// longChat writes the lines of a chat of session id with n messages (a
// prompt and its reply per turn), then rewinds pairs of {"$rewindTo"} of
// the last reply and that reply added again.
func longChat(id string, n, rewinds int) []string {
	lines := []string{`{"sessionId":"` + id + `","projectHash":"x","startTime":"2026-12-01T10:00:00.000Z","kind":"main"}`}
	last := ""
	for i := range n {
		if i%2 == 0 {
			lines = append(lines, fmt.Sprintf(`{"id":"u%d","timestamp":"2026-12-01T10:00:01.000Z","type":"user","content":[{"text":"prompt %d"}]}`, i, i))
			continue
		}
		last = fmt.Sprintf(`{"id":"g%d","timestamp":"2026-12-01T10:00:02.000Z","type":"gemini","content":"done %d","model":"gemini-2.5-pro"}`, i, i)
		lines = append(lines, last)
	}
	for range rewinds {
		lines = append(lines, fmt.Sprintf(`{"$rewindTo":"g%d"}`, n-1), last)
	}
	return lines
}

// TestChatIndex: messages are found by id whatever their number; a rewind
// drops exactly what follows the message it names, which stays findable
// when added again; a replaced history indexes its own messages.
func TestChatIndex(t *testing.T) {
	c := &Chat{}
	for _, l := range longChat(sid, 1000, 3) {
		if _, _, code := c.Line([]byte(l)); code != "" {
			t.Fatalf("line %s: %s", l, code)
		}
	}
	if len(c.msgs) != 1000 || c.index("g999") != 999 || c.index("u0") != 0 || c.index("nope") != -1 {
		t.Fatalf("%d messages, g999 at %d, u0 at %d", len(c.msgs), c.index("g999"), c.index("u0"))
	}
	if ch, _, _ := c.Line([]byte(`{"$rewindTo":"u500"}`)); ch != Rebuilt {
		t.Errorf("a rewind of answered turns: %v, want Rebuilt", ch)
	}
	if len(c.msgs) != 500 || c.index("u500") != -1 || c.index("g501") != -1 || c.index("g499") != 499 || len(c.pos) != 500 {
		t.Errorf("after the rewind: %d messages, %d indexed, g499 at %d", len(c.msgs), len(c.pos), c.index("g499"))
	}
	ch, events, _ := c.Line([]byte(`{"id":"u500","timestamp":"2026-12-01T10:00:03.000Z","type":"user","content":[{"text":"again"}]}`))
	if ch != Appended || len(events) == 0 || events[0].Kind != agentbridge.KindTurnStarted || c.index("u500") != 500 {
		t.Errorf("re-added: %v %v, at %d", ch, events, c.index("u500"))
	}
	w := &Chat{Whole: true}
	w.Line([]byte(`{"sessionId":"` + sid + `","kind":"main"}`))
	w.Line([]byte(`{"$set":{"messages":[{"id":"a","type":"user","content":"x"},{"id":"b","type":"gemini","content":"y"}]}}`))
	w.Line([]byte(`{"$set":{"messages":[{"id":"b","type":"user","content":"z"}]}}`))
	if w.index("a") != -1 || w.index("b") != 0 || len(w.pos) != 1 {
		t.Errorf("a replaced history: a at %d, b at %d, %d indexed", w.index("a"), w.index("b"), len(w.pos))
	}
}

// TestLongChatDoesNotStallOthers: a chat of 30,000 messages followed by
// 5,000 rewind/re-add pairs (each rebuilding the session, which used to
// replay the whole chat 5,000 times, and every message found by a scan of
// the ones before) is read with a normal chat written meanwhile: both are
// shown, the long one as its last record leaves it.
func TestLongChatDoesNotStallOthers(t *testing.T) {
	// Under the race detector on a loaded machine the long chat alone takes
	// seconds; before, its rewinds took minutes.
	old := sourcestest.Timeout
	sourcestest.Timeout = 30 * time.Second
	t.Cleanup(func() { sourcestest.Timeout = old })
	home, project, chat := chatHome(t)
	h, _ := run(t, home, HarnessGemini)
	const long = "99999999-2222-4333-8444-555555555555"
	sourcestest.Append(t, filepath.Join(project, "chats", "session-2026-12-01T09-00-99999999.jsonl"), strings.Join(longChat(long, 30_000, 5_000), "\n")+"\n")
	sourcestest.Append(t, chat, strings.Join(longChat(sid, 2, 0), "\n")+"\n")
	h.WaitFor(t, "the normal chat's turn done", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot(sid)
		return ok && s.LastTurn == agentbridge.LastTurnCompleted
	})
	h.WaitFor(t, "the long chat's last turn done, with its title", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot(long)
		return ok && s.Title == "prompt 0" && s.LastTurn == agentbridge.LastTurnCompleted && s.Status != agentbridge.StatusRunning
	})
}

// BenchmarkChatScaling reads a chat of 10,000 and one of 100,000 messages
// (each with 1,000 rewind/re-add pairs at its end) and reports the time
// per message and the ratio of the two reads: about 10 when reading is
// linear in the chat's length (it was about 100: every message was found
// by a scan of the ones before).
func BenchmarkChatScaling(b *testing.B) {
	small, large := longChat(sid, 10_000, 1_000), longChat(sid, 100_000, 1_000)
	read := func(lines []string) time.Duration {
		start := time.Now()
		c := &Chat{}
		for _, l := range lines {
			c.Line([]byte(l))
		}
		return time.Since(start)
	}
	var ts, tl time.Duration
	for b.Loop() {
		ts += read(small)
		tl += read(large)
	}
	b.ReportMetric(float64(tl)/float64(ts), "x100k/10k")
	b.ReportMetric(float64(tl.Nanoseconds())/float64(b.N)/float64(len(large)), "ns/line")
}
