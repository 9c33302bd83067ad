package claudecode

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

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
