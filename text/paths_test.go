package text

import (
	"testing"
)

func TestShortenPaths(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"no paths here", "no paths here"},
		{"/usr/bin/env", "…/env"},
		{"look at /home/alice/src/app.go please", "look at …/app.go please"},
		{"run `ls /etc/passwd`", "run `ls …/passwd`"},
		{"(/Users/bob/x/) and /tmp", "(…/x) and /tmp"},
		{"see (/tmp/x/y.txt)", "see (…/y.txt)"},
		{"cwd=/srv/app/", "cwd=…/app"},
		{"a;/srv/app/x", "a;…/x"},
		{"in ~/notes/todo.md", "in …/todo.md"},
		{"in ~bob/notes/todo.md", "in …/todo.md"},
		{`open C:\Users\x\a.txt`, "open …/a.txt"},
		{"file:///etc/hosts", "…/hosts"},
		{`\\server\share\f`, "…/f"},
		{"/home/o'brien/x and", "…/x and"},
		{"see https://example.com/a/b", "see https://example.com/a/b"},
		{"http://host/a/b", "http://host/a/b"},
		{"a/b/c relative", "a/b/c relative"},
		{"root / alone", "root / alone"},
		{"/single", "/single"},
		{"and/or 1/2", "and/or 1/2"},
	}
	for _, tt := range tests {
		if got := ShortenPaths(tt.in); got != tt.want {
			t.Errorf("ShortenPaths(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// the two rules share one grammar: what is shortened was a path
		if got := ShortenPaths(tt.in); got != tt.in && !ContainsPath(tt.in) {
			t.Errorf("ShortenPaths changed %q, but ContainsPath finds no path in it", tt.in)
		}
	}
}

func TestContainsPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"/home/x", true},
		{"at /tmp", true},
		{"(/var/log)", true},
		{"key=/etc/x", true},
		{"~/x", true},
		{"~bob/x", true},
		{`C:\x`, true},
		{"D:/x", true},
		{`\\server\share`, true},
		{"FILE:/x", true},
		{"", false},
		{"a/b", false},
		{"1/2", false},
		{"https://example.com/a/b", false},
		{"/ alone", false},
		{"50% done", false},
		{"~ approx", false},
		{"ratio: 1:2", false},
	}
	for _, tt := range tests {
		if got := ContainsPath(tt.in); got != tt.want {
			t.Errorf("ContainsPath(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzShortenPaths(f *testing.F) {
	for _, s := range []string{"look at /home/alice/src/app.go please", `C:\Users\x`, "~bob/x", "file:///etc/x", "/a/b/", "https://h/a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ShortenPaths(s)
		if again := ShortenPaths(got); again != got {
			t.Fatalf("ShortenPaths is not idempotent: %q → %q → %q", s, got, again)
		}
		if utf8RuneCount(got) > utf8RuneCount(s) {
			t.Fatalf("ShortenPaths(%q) = %q is longer", s, got)
		}
		_ = ContainsPath(s)
	})
}

func utf8RuneCount(s string) int { return len([]rune(s)) }
