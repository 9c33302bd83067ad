package claudecode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/google/go-cmp/cmp"
)

// FuzzDecoder checks the fast path against jsontext: a line the scanner
// accepts must be one jsontext accepts, giving the very same record, so
// that what a line means never depends on which reader read it.
func FuzzDecoder(f *testing.F) {
	files, _ := filepath.Glob("testdata/journals/*.jsonl")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for l := range bytes.SplitSeq(data, []byte("\n")) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"type":"user","message":{"content":"a\"b\\\u00e9\ud83d\ude00"},"message":{"content":[1,{"type":"text"}]}}`))
	f.Add([]byte(`{"a":[[[[{"b":-0.5e+10}]]]],"type":"x"  } `))
	f.Fuzz(func(t *testing.T, line []byte) {
		var d decoder
		var fast, slow record
		s := scanner{b: line}
		fastErr := s.object(func(name []byte) error { return topField(&s, name, &fast) })
		if fastErr != nil || !s.end() {
			return // read again by jsontext: nothing to compare
		}
		if err := d.slow(line, &slow); err != nil {
			t.Fatalf("the fast path accepts a line jsontext rejects (%v): %q", err, line)
		}
		if diff := cmp.Diff(slow, fast, cmp.AllowUnexported(record{}, message{}, block{})); diff != "" {
			t.Fatalf("fast and jsontext records differ (-jsontext +fast):\n%s", diff)
		}
	})
}

// TestScannerString checks the string reader on the cases its shortcuts
// (quote and backslash found by IndexByte, control bytes found eight at a
// time) could get wrong.
func TestScannerString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" when it must be refused
	}{
		{`"abc"x`, `"abc"`},
		{`"a\"b"`, `"a\"b"`},
		{`"a\\"b"`, `"a\\"`},
		{`"a\\\"b"`, `"a\\\"b"`},
		{`"0123456789abcdef\n"`, `"0123456789abcdef\n"`},
		{`"\u00e9"`, `"\u00e9"`},
		{"\"\xff\xfe\"", "\"\xff\xfe\""},
		{`"\ud83d\ude00"`, ``}, // surrogates: left to jsontext
		{`"\u00g0"`, ``},
		{`"\x"`, ``},
		{"\"01234567\x01abcdef\"", ``},
		{"\"ab\tc\"", ``},
		{`"abc`, ``},
		{`"abc\`, ``},
		{`"abc\"`, ``},
	} {
		s := scanner{b: []byte(tc.in)}
		got, ok := s.string()
		if string(got) != tc.want || ok != (tc.want != "") {
			t.Errorf("string(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

// TestAttachmentQueuedCommand checks that the quick look at an
// attachment's type finds a queued command however encoding/json would
// have matched its "type" (any case, an escaped name, a duplicate name).
func TestAttachmentQueuedCommand(t *testing.T) {
	const start = `{"type":"assistant","timestamp":"2026-01-01T00:00:00Z","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Agent","input":{"description":"d"}}]}}`
	const result = `{"type":"user","timestamp":"2026-01-01T00:00:01Z","toolUseResult":{"status":"async_launched","agentId":"a1"},"message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}}`
	const note = `"prompt":"<task-notification><tool-use-id>toolu_1</tool-use-id><status>completed</status></task-notification>"`
	finished := func(att string) bool {
		m := NewMapper("s", MapperOptions{})
		for _, l := range []string{start, result, `{"type":"attachment","timestamp":"2026-01-01T00:00:02Z","attachment":` + att + `}`} {
			evs, err := m.Line([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.Kind == agentbridge.KindSubagentDone {
					return true
				}
			}
		}
		return false
	}
	for att, want := range map[string]bool{
		`{"type":"queued_command",` + note + `}`:                    true,
		`{"TYPE":"queued_command",` + note + `}`:                    true,
		`{"\u0074ype":"queued_command",` + note + `}`:               true,
		`{"type":"other","type":"queued_command",` + note + `}`:     true,
		`{"type":"queued_command","type":null,` + note + `}`:        true,
		`{"type":"hook_success",` + note + `}`:                      false,
		`{"type":"queued_command","prompt":"no notification here"}`: false,
	} {
		if got := finished(att); got != want {
			t.Errorf("attachment %s: subagent finished %v, want %v", att, got, want)
		}
	}
}

// FuzzFieldReaders checks agentResultOf and usageOf against
// json.Unmarshal into the same structs, for any valid JSON object.
func FuzzFieldReaders(f *testing.F) {
	f.Add([]byte(`{"status":"async_launched","agentId":"a1","content":[{"type":"text","text":"long\nanswer"}]}`))
	f.Add([]byte(`{"STATUS":"x","status":null,"agentid":"\u0061\ud83d\ude00","ſtatus":"y"}`))
	f.Add([]byte(`{"input_tokens":3,"output_tokens":null,"cache_read_input_tokens":-0,"cache_creation_input_tokens":5,"server_tool_use":{"web_search_requests":0}}`))
	f.Add([]byte(`{"input_tokens":1.0}`))
	f.Add([]byte(`{"input_tokens":"5","INPUT_TOKENS":99999999999999999999}`))
	f.Add([]byte("{\"status\":\"\xff\xfe\"}"))
	f.Fuzz(func(t *testing.T, obj []byte) {
		if !json.Valid(obj) || len(obj) == 0 || obj[0] != '{' {
			return
		}
		var wantRes agentResult
		_ = json.Unmarshal(obj, &wantRes)
		if got := agentResultOf(obj); got != wantRes {
			t.Errorf("agentResultOf(%q) = %+v, json.Unmarshal gives %+v", obj, got, wantRes)
		}
		var wantUse apiUsage
		wantOK := json.Unmarshal(obj, &wantUse) == nil
		gotUse, gotOK := usageOf(obj)
		if gotOK != wantOK || (wantOK && gotUse != wantUse) {
			t.Errorf("usageOf(%q) = %+v, %v; json.Unmarshal gives %+v, %v", obj, gotUse, gotOK, wantUse, wantOK)
		}
	})
}
