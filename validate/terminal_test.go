package validate

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
