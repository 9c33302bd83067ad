package pi

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func mapper(string) sourcestest.Mapper { return sourcestest.Mapper{Line: newSession().mapRecord} }

// TestGolden maps each journal in testdata/journals (recordings of real Pi
// sessions, and journals written from Pi's session format for the entries
// the recordings lack: tools, failed and aborted turns, /name, "!"
// commands, bad lines) and compares the events and the snapshot they fold
// into with testdata/golden.
func TestGolden(t *testing.T) {
	sourcestest.GoldenDir(t, filepath.Join("testdata", "journals"), Harness, nil, mapper, *update)
}
