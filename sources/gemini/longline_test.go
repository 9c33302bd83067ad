package gemini

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/agentbridge/agentbridge"
)

// TestHeadRecord cuts every message line of a real chat (the recording of
// a long transcript line: prompts, replies with tool calls) at many
// points and decodes each head: what it yields is always what the whole
// line says as far as the head goes — the same id and type once they are
// in the head, a prompt's text as a prefix of the prompt, each tool call
// read the same as in the line — and a head that has not reached the id
// and type yields no record.
func TestHeadRecord(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "irrlicht", "gemini-cli", "2-16_oversized-transcript-line", "recordings", "*", "transcript.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("recordings %v", paths)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	messages, prompts, calls := 0, 0, 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		var full chatRecord
		if json.Unmarshal(line, &full) != nil || full.ID == "" {
			continue
		}
		messages++
		fullText, fullPrompt := userText(full.Content)
		for cut := 1; cut < len(line); cut += 37 {
			r, ok := headRecord(line[:cut])
			if !ok {
				if typeAt := bytes.Index(line, []byte(`"type":"`+full.Type+`"`)); typeAt >= 0 && cut > typeAt+len(full.Type)+9 && bytes.Index(line, []byte(`"content"`)) > cut {
					t.Errorf("%s cut at %d: no record, though its id and type are in the head", full.ID, cut)
				}
				continue
			}
			if r.ID != full.ID || r.Type != full.Type {
				t.Fatalf("%s cut at %d: id %q type %q, want %q %q", full.ID, cut, r.ID, r.Type, full.ID, full.Type)
			}
			if text, prompt := userText(r.Content); prompt {
				prompts++
				if !fullPrompt || !strings.HasPrefix(fullText, strings.TrimSpace(text)) {
					t.Errorf("%s cut at %d: prompt %q, not the start of %q", full.ID, cut, text, fullText)
				}
			}
			for i, tc := range r.ToolCalls {
				calls++
				want := full.ToolCalls[i]
				if tc.ID != want.ID || (tc.Name != "" && tc.Name != want.Name) || (tc.Status != "" && tc.Status != want.Status) {
					t.Errorf("%s cut at %d: tool call %+v, the line has %+v", full.ID, cut, tc, want)
				}
			}
		}
	}
	if messages < 8 || prompts == 0 || calls == 0 {
		t.Errorf("%d messages, %d prompt heads, %d tool call heads: the recording no longer exercises the heads", messages, prompts, calls)
	}
}

// A prompt too long to read starts its turn, titled with the text it
// begins with; a reply's head with a tool call keeps the turn running
// after a preamble that looked finished; a patch's head changes nothing.
func TestLongLineTurns(t *testing.T) {
	c := &Chat{}
	if ch, _, code := c.Line([]byte(`{"sessionId":"s1","projectHash":"p","startTime":"2026-01-01T00:00:00Z","kind":"main"}`)); ch != Appended || code != "" {
		t.Fatalf("metadata: %v %q", ch, code)
	}
	pasted := `{"id":"u1","timestamp":"2026-01-01T00:00:01Z","type":"user","content":[{"text":"summarise this log: ` + strings.Repeat(`line \"x\"\n`, 500)
	ch, events := c.LongLine([]byte(pasted))
	if ch != Appended || len(events) != 2 || events[0].Kind != agentbridge.KindTurnStarted || !strings.HasPrefix(events[1].Title, `summarise this log: line "x"`) {
		t.Fatalf("prompt head: %v %+v", ch, events)
	}
	if ch, events, _ := c.Line([]byte(`{"id":"g1","timestamp":"2026-01-01T00:00:02Z","type":"gemini","content":"Reading it.","model":"gemini-2.5-pro"}`)); ch != Appended || events[len(events)-1].Kind != agentbridge.KindAgentDone {
		t.Fatalf("preamble: %v %+v", ch, events)
	}
	ch, _ = c.LongLine([]byte(`{"id":"g1","timestamp":"2026-01-01T00:00:02Z","type":"gemini","content":"Reading it.","model":"gemini-2.5-pro","toolCalls":[{"id":"read-1","name":"read_file","args":{"path":"/x"},"result":[{"functionResponse":{"response":{"output":"` + strings.Repeat("y", 1000)))
	if ch != Rebuilt {
		t.Fatalf("tool call head: %v, want the preamble's end undone", ch)
	}
	var kinds []string
	for _, e := range c.Events() {
		kinds = append(kinds, string(e.Kind)+":"+e.Name)
	}
	if want := "session.started: turn.started: agent.metadata: agent.metadata: tool.started:read_file"; strings.Join(kinds, " ") != want {
		t.Errorf("events %s, want %s", strings.Join(kinds, " "), want)
	}
	for _, head := range []string{`{"$set":{"messages":[{"id":"u1"`, `{"$rewindTo":"u`, `{"id":"i1","type":"info","content":"x`} {
		if ch, events := c.LongLine([]byte(head)); ch != Unchanged || events != nil {
			t.Errorf("head %s: %v %+v, want nothing", head, ch, events)
		}
	}
}
