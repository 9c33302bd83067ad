package cursor

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// FuzzMap feeds arbitrary transcripts to the mapper: it never panics,
// reports only its documented codes, and every event it emits is accepted
// by the fold, in order. Seeds: testdata/fuzz/FuzzMap.
func FuzzMap(f *testing.F) {
	f.Add([]byte(`{"role":"user","message":{"content":[{"type":"text","text":"hi"}]}}` + "\n" + `{"type":"turn_ended","status":"success"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := mapper{cwd: "/w"}
		s := fold.NewSession("fuzz", Harness)
		var buf []agentbridge.Event
		for i, line := range bytes.Split(data, []byte("\n")) {
			var code string
			buf, code = m.Map(s, i+1, line, buf[:0])
			if code != "" && code != sources.CodeInvalidJSON && code != sources.CodeInvalidRecord {
				t.Fatalf("undocumented code %q", code)
			}
			for _, e := range buf {
				validate.RedactEvent(&e)
				if issues := s.Apply(e); len(issues) > 0 {
					t.Fatalf("the fold rejected %+v: %+v", e, issues)
				}
			}
		}
		if n := len(s.OpenTools(nil)); n > fold.MaxOpenTools {
			t.Fatalf("%d open tools", n)
		}
	})
}

// FuzzDecodeSlug: any name decodes to "" or a clean absolute path, within
// the probe bound.
func FuzzDecodeSlug(f *testing.F) {
	for _, s := range []string{"home-ana-shop", "empty-window", "a-b-c-d", "--", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, slug string) {
		probes := 0
		got := DecodeSlug(slug, func(p string) bool { probes++; return !strings.HasSuffix(p, "z") })
		if probes > maxSlugProbes+1 {
			t.Fatalf("%d probes", probes)
		}
		if got != "" && validate.CleanCwd(got) != got {
			t.Fatalf("DecodeSlug(%q) = %q, not a clean absolute path", slug, got)
		}
	})
}
