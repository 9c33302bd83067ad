package example

import (
	"flag"
	"testing"

	"github.com/agentbridge/agentbridge"
	journals "github.com/agentbridge/agentbridge/sources/example/demo"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// mapper maps the lines of journal id (mapRecord) for the golden harness.
func mapper(id string) sourcestest.Mapper {
	return sourcestest.Mapper{Line: func(line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
		e, ok, code := mapRecord(id, line, nil)
		if ok {
			out = append(out, e)
		}
		return out, code
	}}
}

// TestGolden maps each bundled journal, line by line, as the session its
// name is, and compares the events of every line and the snapshot they
// fold into with testdata/golden/<journal>.json (-update rewrites them).
func TestGolden(t *testing.T) {
	sourcestest.GoldenFS(t, journals.Journals, Harness, func(name string) string { return name }, nil, mapper, *update)
}
