package claudecode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// growthOffsets returns the sizes at which the recorded transcript of
// session sid grew, from the recording's events.jsonl (irrlicht's daemon
// log: transcript_new / transcript_activity with file_size), clamped to
// size and ending with size.
func growthOffsets(t *testing.T, path, sid string, size int) []int {
	t.Helper()
	growth, err := sourcestest.ReadGrowth(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int
	for _, g := range growth {
		if g.Session == sid {
			offs = append(offs, min(int(g.Size), size))
		}
	}
	offs = append(offs, size)
	slices.Sort(offs)
	return slices.Compact(offs)
}

// TestRecordedGrowth replays real recorded sessions into a live source the
// way they grew on disk (at the byte offsets the recording logged, which
// often cut a line in two) and checks that a client of the HTTP stream ends
// with the same snapshot as the golden replay.
func TestRecordedGrowth(t *testing.T) {
	files, _ := filepath.Glob("testdata/growth/*.events.jsonl")
	if len(files) == 0 {
		t.Fatal("no recordings under testdata/growth")
	}
	for _, ev := range files {
		name := strings.TrimSuffix(filepath.Base(ev), ".events.jsonl")
		t.Run(name, func(t *testing.T) {
			journal := filepath.Join("testdata", "journals", name+".jsonl")
			data, err := os.ReadFile(journal)
			if err != nil {
				t.Fatal(err)
			}
			sid := firstSessionID(data)
			var g sourcestest.LineGolden
			golden, err := os.ReadFile(filepath.Join("testdata", "golden", goldenName(journal)+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(golden, &g); err != nil {
				t.Fatal(err)
			}
			want := g.Snapshot
			var src *Source
			e := startLiveWith(t, nil, &src)
			p := filepath.Join(e.dir, "projects", "-rec", sid+".jsonl")
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			prev := 0
			tl := src.Tailer()
			for _, off := range growthOffsets(t, ev, sid, len(data)) {
				w := tl.Wakes()
				if _, err := f.Write(data[prev:off]); err != nil {
					t.Fatal(err)
				}
				prev = off
				// Let the source see this stage (often a cut line) before
				// the next write.
				for deadline := time.Now().Add(10 * time.Second); tl.Wakes() == w && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}
			want.Status = sourcestest.ShownStatus(&want, nil) // waitFor's view
			wj, _ := json.Marshal(want)
			e.view.waitFor(t, "final state", sid, func(s agentbridge.Snapshot, ok bool) bool {
				gj, _ := json.Marshal(s)
				return ok && bytes.Equal(gj, wj)
			})
		})
	}
}
