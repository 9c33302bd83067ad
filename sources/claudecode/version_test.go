package claudecode

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestVersionsSeen: GET /v1/sources lists the Claude Code version a
// transcript's records name (a real 2.1.242 transcript) beside the range
// the live suite tested.
func TestVersionsSeen(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/journals/v2.1.242-live-bash-approved.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	const id = "a2ee9691-4aae-47ae-923d-236b9e31361e"
	sourcestest.Append(t, filepath.Join(home, "projects", "-tmp-w", id+".jsonl"), string(b))
	var clock sourcestest.Clock
	r := sourcestest.RunReal(t, New(Options{Home: home}), &clock, hub.Options{Tested: sources.Tested})
	r.WaitFor(t, "the session", func(*hub.Hub) bool { _, ok := r.Entry(id); return ok })
	st, _ := r.Source(SourceID)
	i := slices.IndexFunc(st.Harnesses, func(hs agentbridge.HarnessState) bool { return hs.ID == Harness })
	if i < 0 {
		t.Fatal("no claude-code harness")
	}
	hs := st.Harnesses[i]
	if !slices.Equal(hs.VersionsSeen, []string{"2.1.242"}) || hs.Tested == nil || *hs.Tested != sources.Tested[Harness] {
		t.Errorf("harness %+v (tested %v), want versionsSeen [2.1.242] beside %v", hs, hs.Tested, sources.Tested[Harness])
	}
}
