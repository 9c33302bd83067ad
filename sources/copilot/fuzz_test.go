package copilot

import (
	"bytes"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// FuzzMap feeds arbitrary journals (lines split at '\n') to the mapper:
// it never panics, reports only the diagnostic codes it documents, and
// every event it emits is one the fold accepts, in that order, so a
// hostile journal can cost a session lines but never an invalid event.
// Seeds: testdata/fuzz/FuzzMap (the golden journals' lines, cut and
// combined).
func FuzzMap(f *testing.F) {
	f.Add([]byte(`{"type":"session.start","data":{"context":{"cwd":"/w"}},"id":"a","timestamp":"2026-08-05T15:38:08.238Z"}` + "\n" +
		`{"type":"permission.requested","data":{"requestId":"r","permissionRequest":{"kind":"shell","fullCommandText":"ls"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := mapper{session: "fuzz"}
		s := fold.NewSession("fuzz", Harness)
		var buf []agentbridge.Event
		for _, line := range bytes.Split(data, []byte("\n")) {
			var code string
			buf, code = m.Map(s, line, buf[:0])
			switch code {
			case "", sources.CodeInvalidJSON, sources.CodeInvalidRecord:
			default:
				t.Fatalf("undocumented code %q", code)
			}
			for _, e := range buf {
				validate.RedactEvent(&e)
				if issues := s.Apply(e); len(issues) > 0 {
					t.Fatalf("the fold rejected %+v: %+v", e, issues)
				}
			}
		}
		if len(m.tools) > fold.MaxOpenTools || len(m.waits) > fold.MaxOpenWaits ||
			len(m.subagents) > validate.MaxSubagents || len(m.titles) > maxTitles {
			t.Fatalf("state grew past its bounds: %d tools, %d waits, %d subagents, %d titles",
				len(m.tools), len(m.waits), len(m.subagents), len(m.titles))
		}
	})
}
