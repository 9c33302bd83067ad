package kit

import (
	"testing"

	"github.com/agentbridge/agentbridge/sources"
)

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
