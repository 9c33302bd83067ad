package pi

import (
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// BenchmarkMapRecord maps the golden journals line by line: the cost of a
// scan at start, per byte of journal.
func BenchmarkMapRecord(b *testing.B) {
	sourcestest.BenchLines(b, filepath.Join("testdata", "journals"), mapper)
}
