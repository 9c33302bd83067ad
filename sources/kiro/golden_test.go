package kiro

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func mapper(string) sourcestest.Mapper {
	s := newSession()
	return sourcestest.Mapper{Line: s.mapRecord, Side: s.mapSidecar}
}

// sidecarOf is <name>.json beside <name>.jsonl.
func sidecarOf(journal string) string { return strings.TrimSuffix(journal, "l") }

// TestGolden maps each session in testdata/sessions (<name>.jsonl and its
// optional <name>.json sidecar: recordings of real Kiro CLI sessions, and
// sessions written from the format for what they lack: tools, an
// interrupted turn, /clear, bad lines) and compares the events and the
// snapshot they fold into with testdata/golden/<name>.json.
func TestGolden(t *testing.T) {
	sourcestest.GoldenDir(t, filepath.Join("testdata", "sessions"), Harness, sidecarOf, mapper, *update)
}
