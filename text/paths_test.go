package validate

import (
	"strings"
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

func TestDisplay(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 100)
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"", MaxTitle, ""},
		{"  fix\tthe /home/u/repo/main.go\nbug  ", MaxTitle, "fix the …/main.go bug"},
		{"key sk-ant-api03-" + strings.Repeat("a", 40), MaxTitle, "key " + Redacted},
		{long, 10, "word word…"},
		{"\x00\x01", MaxTitle, ""},
	}
	for _, tt := range tests {
		if got := Display(tt.in, tt.limit); got != tt.want {
			t.Errorf("Display(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
	if Title(long) != Display(long, MaxTitle) || Label(long) != Display(long, MaxText) {
		t.Errorf("Title and Label are not Display with their bounds")
	}
}

func TestSafeID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"toolu_01FUU3kHfh1aksNtQQSYSuse", "toolu_01FUU3kHfh1aksNtQQSYSuse"},
		{"5d7e0c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6", "5d7e0c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6"},
		{"", ""},
		{"thread id?", "x-f2d13c4ec5d7d1b0bbd2d0c1c1e6a6b5"},
	} {
		got := SafeID(tc.in)
		if tc.in == "thread id?" {
			if len(got) != 34 || !strings.HasPrefix(got, "x-") {
				t.Errorf("SafeID(%q) = %q, want x- and 32 hex digits", tc.in, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("SafeID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"[trimmed for fixture]", strings.Repeat("a", 129), "a b", "ü", "a/b"} {
		got := SafeID(bad)
		if !ValidID(got) || got == bad || SafeID(bad) != got || SafeID(bad+"x") == got {
			t.Errorf("SafeID(%q) = %q: want a valid, stable, distinct derived id", bad, got)
		}
	}
}

func TestCleanCwd(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/work/proj": "/work/proj", "/work/proj/": "/work/proj", "/": "/", "//": "/",
		"/a/./b/": "/a/b", "/a//b": "/a/b",
		"/a/../b": "", "/..": "", "relative": "", `C:\Users\x`: "", "": "", "/a\x00b": "", "/a\xffb": "",
		"/" + strings.Repeat("a", MaxCwdBytes): "",
	} {
		got := CleanCwd(in)
		if got != want {
			t.Errorf("CleanCwd(%q) = %q, want %q", in, got, want)
		}
		if got != "" && !ValidCwd(got) {
			t.Errorf("CleanCwd(%q) = %q, which ValidCwd refuses", in, got)
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
