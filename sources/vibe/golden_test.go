package vibe

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func mapper(id string) sourcestest.Mapper {
	s := newSession(id)
	return sourcestest.Mapper{Line: s.mapRecord, Side: s.mapMeta}
}

// metaOf is <name>.meta.json beside <name>.jsonl (a session directory's
// meta.json beside its messages.jsonl).
func metaOf(journal string) string { return strings.TrimSuffix(journal, ".jsonl") + ".meta.json" }

// TestGolden maps each session in testdata/sessions (<name>.jsonl, a
// messages.jsonl, and its optional <name>.meta.json: recordings of real
// Vibe sessions, and sessions written from the format for what they lack:
// failed and refused tools, an injected "!" result, a failed subagent, an
// interrupted turn, bad lines) and compares the events and the snapshot
// they fold into with testdata/golden/<name>.json.
func TestGolden(t *testing.T) {
	sourcestest.GoldenDir(t, filepath.Join("testdata", "sessions"), Harness, metaOf, mapper, *update)
}
