package text

import (
	"encoding/json"
	"testing"
)

func TestPrintable(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "Fix the tests — café", "Fix the tests — café"},
		{"right-to-left override", "invoice\u202Etxt.exe", "invoice\uFFFDtxt.exe"},
		{"isolates", "a\u2066b\u2067c\u2068d\u2069", "a\uFFFDb\uFFFDc\uFFFDd\uFFFD"},
		{"embeddings", "\u202A\u202B\u202C\u202D", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"zero-width", "id\u200Bx\u200C\u200D\u200E\u200F\u2060\uFEFF", "id\uFFFDx\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"C1 CSI", "a\u009B31mred", "a 31mred"},
		{"ESC", "a\x1b[2Jb", "a [2Jb"},
		{"line breaks and tabs", "a\nb\tc\r", "a b c "},
		{"DEL", "a\x7fb", "a b"},
		{"invalid UTF-8", "a\xffb", "a\uFFFDb"},
		// round 4: more characters that hide or reorder
		{"Arabic letter mark", "a\u061Cb", "a\uFFFDb"},
		{"invisible operators", "a\u2061\u2062\u2063\u2064b", "a\uFFFD\uFFFD\uFFFD\uFFFDb"},
		{"Mongolian vowel separator", "a\u180Eb", "a\uFFFDb"},
		{"soft hyphen", "pay\u00ADpal", "pay\uFFFDpal"},
		{"tag characters", "ok\U000E0001\U000E0069\U000E0067\U000E006E", "ok\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"Hangul fillers", "a\u3164\u115F\uFFA0b", "a\uFFFD\uFFFD\uFFFDb"},
		{"combining grapheme joiner", "a\u034Fb", "a\uFFFDb"},
		{"interlinear annotation", "a\uFFF9b\uFFFAc\uFFFB", "a\uFFFDb\uFFFDc\uFFFD"},
		{"line and paragraph separators", "a\u2028b\u2029c", "a b c"},
		{"NEL", "a\u0085b", "a b"},
		{"emoji and accents stay", "✅ café 日本", "✅ café 日本"},
	}
	for _, tt := range tests {
		if got := Printable(tt.in); got != tt.want {
			t.Errorf("%s: Printable(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestEscapeJSON(t *testing.T) {
	in := map[string]string{"title": "a\u009B31m\u202Eb\u200Bc\u0085é", "ok": "plain"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got := EscapeJSON(b)
	want := `{"ok":"plain","title":"a\u009b31m\u202eb\u200bc\u0085é"}`
	if string(got) != want {
		t.Fatalf("EscapeJSON = %s, want %s", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["title"] != in["title"] {
		t.Fatalf("not the same value: %q %v", back["title"], err)
	}
	plain := []byte(`{"a":"b"}`)
	if out := EscapeJSON(plain); &out[0] != &plain[0] {
		t.Error("clean JSON was copied")
	}
}

func FuzzEscapeJSON(f *testing.F) {
	f.Add(`a` + "\u009b\u202e")
	f.Add("plain")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(s)
		if err != nil {
			return
		}
		var orig, back string
		if err := json.Unmarshal(b, &orig); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(EscapeJSON(b), &back); err != nil {
			t.Fatalf("EscapeJSON made invalid JSON: %v", err)
		}
		if back != orig {
			t.Fatalf("value changed: %q → %q", orig, back)
		}
		for _, r := range Printable(s) {
			if isControl(r) || Hidden(r) {
				t.Fatalf("Printable left %U", r)
			}
		}
	})
}

// TestEscapeJSONAstral: hidden characters outside the BMP (the tag
// characters, which can spell a whole hidden text) and the line
// separators are escaped too, as the same JSON value: a tag character as
// its surrogate pair. Before, a tag character was written raw.
func TestEscapeJSONAstral(t *testing.T) {
	in := map[string]string{"title": "ok\U000E0001\U000E0069x\u2028y\u061Cz"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got := EscapeJSON(b)
	want := `{"title":"ok\udb40\udc01\udb40\udc69x\u2028y\u061cz"}`
	if string(got) != want {
		t.Fatalf("EscapeJSON = %s, want %s", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["title"] != in["title"] {
		t.Fatalf("the escaped JSON reads back as %q, %v", back["title"], err)
	}
}
