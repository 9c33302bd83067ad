package vibe

import (
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge/sources/internal/kittest"
)

// BenchmarkMapRecord maps the golden journals line by line: the cost of a
// scan at start, per byte of journal.
func BenchmarkMapRecord(b *testing.B) {
	kittest.BenchLines(b, filepath.Join("testdata", "sessions"), mapper)
}
