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

// toolCallsLine is a reply of id listing n tool calls t<from>… (status
// "success" when done, else none: still running).
func toolCallsLine(id string, from, n int, done bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"type":"gemini","content":"","toolCalls":[`, id)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		status := ""
		if done {
			status = `,"status":"success"`
		}
		fmt.Fprintf(&b, `{"id":"t%d","name":"shell"%s}`, from+i, status)
	}
	b.WriteString("]}")
	return b.String()
}

// TestToolCallsAreBounded: a reply listing 40,000 tool calls (1 MB; an
// 8 MiB line holds 300,000) makes events for at most maxToolCalls of
// them, and a turn whose replies each leave calls running follows at
// most maxOpenTools as running, so the state kept with every message
// stays small. Before, the calls were looked up in a list of every call
// still running (40,000 took 6.5 s, growing with the square) and every
// message kept its own copy of that list.
func TestToolCallsAreBounded(t *testing.T) {
	for _, done := range []bool{false, true} {
		c := &Chat{}
		c.Line([]byte(`{"sessionId":"` + sid + `","kind":"main"}`))
		c.Line([]byte(`{"id":"u0","type":"user","content":[{"text":"go"}]}`))
		ch, events, code := c.Line([]byte(toolCallsLine("g1", 0, 40000, done)))
		per := 1
		if done {
			per = 2 // started and finished
		}
		if ch != Appended || code != "" || len(events) > per*maxToolCalls || len(events) < per*min(maxToolCalls, maxOpenTools) {
			t.Fatalf("done %v: %v %q with %d events; want at most %d", done, ch, code, len(events), per*maxToolCalls)
		}
	}

	c := &Chat{}
	c.Line([]byte(`{"sessionId":"` + sid + `","kind":"main"}`))
	c.Line([]byte(`{"id":"u0","type":"user","content":[{"text":"go"}]}`))
	for i := range 2000 {
		c.Line([]byte(toolCallsLine(fmt.Sprint("g", i), 3*i, 3, false)))
	}
	held := 0
	for _, m := range c.msgs {
		held += len(m.after.tools)
	}
	if open := strings.Count(c.msgs[len(c.msgs)-1].after.tools, "\x00"); open != maxOpenTools {
		t.Errorf("%d tools followed as running; want the bound %d", open, maxOpenTools)
	}
	if held > len(c.msgs)*maxOpenTools*16 {
		t.Errorf("the messages' states hold %d bytes of tool ids", held)
	}
	// a call followed as running still finishes
	_, events, _ := c.Line([]byte(`{"id":"gx","type":"gemini","content":"","toolCalls":[{"id":"t0","name":"shell","status":"success"}]}`))
	if len(events) != 1 || events[0].Kind != agentbridge.KindToolFinished {
		t.Errorf("finishing a running call: %v", events)
	}
}

// TestHostileChatLines: lines a hostile chat can hold are skipped or
// applied as Gemini CLI would, without a panic: ids of a megabyte (the
// session's and a message's: refused as records), a rewind to an id the
// chat never had (Gemini CLI clears the conversation), rewinds before
// any message and of an id of a megabyte, nesting four million levels
// deep (refused as JSON), $set of messages with one id twice, and a
// line of 9 MiB through the source (skipped with line-too-long, the
// next line of the chat still read).
func TestHostileChatLines(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	c := &Chat{}
	if _, _, code := c.Line([]byte(`{"sessionId":"` + huge + `","kind":"main"}`)); code == "" {
		t.Error("a session id of 1 MiB was taken")
	}
	c.Line([]byte(`{"sessionId":"` + sid + `","kind":"main"}`))
	for _, tc := range []struct {
		line string
		msgs int
		bad  bool
	}{
		{`{"$rewindTo":"nothing-yet"}`, 0, false},
		{`{"id":"u0","type":"user","content":[{"text":"go"}]}`, 1, false},
		{`{"id":"` + huge + `","type":"user","content":[{"text":"go"}]}`, 1, true},
		{`{"$rewindTo":"` + huge + `"}`, 0, false},
		{`{"id":"u1","type":"user","content":[{"text":"again"}]}`, 1, false},
		{`{"id":"u2","type":"user","content":` + strings.Repeat("[", 4<<20) + `}`, 1, true},
		{`{"id":"u3","type":"user","content":[{"text":"x","y":` + strings.Repeat(`{"a":`, 1<<20) + `}]}`, 1, true},
		{`{"$rewindTo":"never-seen"}`, 0, false},
		{`{"$set":{"messages":[{"id":"a","type":"user","content":"x"},{"id":"a","type":"user","content":"y"}]}}`, 1, false},
		{`{"$rewindTo":"a"}`, -1, false},
		{`{"id":"a","type":"user","content":[{"text":"z"}]}`, -1, false},
	} {
		_, _, code := c.Line([]byte(tc.line))
		if tc.bad != (code != "") || tc.msgs >= 0 && len(c.msgs) != tc.msgs {
			t.Errorf("%.60s…: code %q, %d messages; want %d, skipped %v", tc.line, code, len(c.msgs), tc.msgs, tc.bad)
		}
		for id, i := range c.pos {
			if i >= len(c.msgs) || c.msgs[i].id != id {
				t.Fatalf("%.60s…: the index names %s at %d of %d messages", tc.line, id, i, len(c.msgs))
			}
		}
	}

	home, _, chat := chatHome(t)
	h, _ := run(t, home, HarnessGemini)
	lines := longChat(sid, 2, 0)
	sourcestest.Append(t, chat, lines[0]+"\n"+lines[1]+"\n"+`{"id":"big","type":"user","content":"`+strings.Repeat("a", 9<<20)+`"}`+"\n"+lines[2]+"\n")
	h.WaitFor(t, "the turn after the long line done, and line-too-long", func(h *sourcestest.Hub) bool {
		said := false
		for _, d := range h.Diagnostics() {
			said = said || d.Code == "line-too-long" && !strings.Contains(d.Message, home)
		}
		s, ok := h.Snapshot(sid)
		return said && ok && s.LastTurn == agentbridge.LastTurnCompleted
	})
}
