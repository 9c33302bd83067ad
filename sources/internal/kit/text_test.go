package kit

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/sources"
)

func TestText(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"", 200, ""},
		{"  fix the\tbuild\n", 200, "fix the build"},
		{"edit /home/u/repo/main.go now", 200, "edit …/main.go now"},
		{"see https://example.com/a/b", 200, "see https://example.com/a/b"},
		{"abcdef", 4, "abc…"},
		{"token sk-ant-api03-" + strings.Repeat("x", 40), 200, "token [redacted]"},
		{strings.Repeat("é", 5000), 10, strings.Repeat("é", 9) + "…"},
	}
	for _, tt := range tests {
		if got := Text(tt.in, tt.max); got != tt.want {
			t.Errorf("Text(%.40q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestCwd(t *testing.T) {
	for in, want := range map[string]string{
		"/work/app":  "/work/app",
		"/work/app/": "/work/app",
		"/":          "/",
		"":           "",
		"work/app":   "",
		"/a/../b":    "",
		"/a//b":      "",
		"/a/./b":     "",
		"/a\x00b":    "",
		`C:\Users\x`: "",
	} {
		if got := Cwd(in); got != want {
			t.Errorf("Cwd(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnixSeconds(t *testing.T) {
	if got := UnixSeconds(1780617364); got != 1780617364000 {
		t.Errorf("UnixSeconds = %d", got)
	}
	for _, bad := range []float64{-5, 0, 1e12} {
		if got := UnixSeconds(bad); got != 0 {
			t.Errorf("UnixSeconds(%v) = %d, want 0", bad, got)
		}
	}
}

func TestDecode(t *testing.T) {
	type rec struct {
		A []int  `json:"a"`
		B string `json:"b"`
	}
	for in, want := range map[string]string{
		`{"a":[1,2]}`:       "",
		`{"a":"x"}`:         sources.CodeInvalidRecord, // valid JSON, wrong shape
		`[1,2]`:             sources.CodeInvalidJSON,
		``:                  sources.CodeInvalidJSON,
		`{"a":`:             sources.CodeInvalidJSON,
		`{"b":"1","b":"2"}`: sources.CodeInvalidJSON, // duplicate names
		"{\"b\":\"\xff\"}":  sources.CodeInvalidJSON,
	} {
		r := rec{B: "stale"}
		if got := Decode([]byte(in), &r); got != want {
			t.Errorf("Decode(%q) = %q, want %q", in, got, want)
		}
		if in == `{"a":[1,2]}` && r.B != "" {
			t.Errorf("scratch not reset: %+v", r)
		}
	}
}

func TestID(t *testing.T) {
	if got := ID("call_1"); got != "call_1" {
		t.Errorf("ID of an identity value = %q", got)
	}
	if got := ID(""); got != "" {
		t.Errorf("ID(\"\") = %q", got)
	}
	a, b := ID("call_x|fc_y"), ID("call_x|fc_z")
	if !sources.ValidID(a) || !strings.HasPrefix(a, "x-") || len(a) != 34 || a == b || ID("call_x|fc_y") != a {
		t.Errorf("derived ids %q %q: want stable, distinct, valid x-<32 hex>", a, b)
	}
	if long := strings.Repeat("a", 129); !sources.ValidID(ID(long)) {
		t.Errorf("an over-long id is not derived: %q", ID(long))
	}
}
