package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenJournals lists the transcripts replayed by TestGolden: every file in
// testdata/journals and the root transcripts of testdata/home.
func goldenJournals(t *testing.T) []string {
	t.Helper()
	a, _ := filepath.Glob("testdata/journals/*.jsonl")
	b, _ := filepath.Glob("testdata/home/projects/*/*.jsonl")
	all := append(a, b...)
	if len(all) == 0 {
		t.Fatal("no journals under testdata")
	}
	return all
}

// replay maps a transcript line by line as the source does (the mapper
// reading the fold it is checked against, the session's start once every
// line is read; a malformed line is skipped as invalid-json) with
// sourcestest.MapSession, and returns the golden and the session the
// events fold into. An event the fold or the validator rejects fails the
// test: the mapper must only emit what the contract accepts.
func replay(t *testing.T, path string, o MapperOptions) (sourcestest.LineGolden, *fold.Session) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	id := firstSessionID(data)
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(path), ".jsonl")
	}
	var view fold.View
	o.View = func() fold.View { return view }
	m := NewMapper(id, o)
	return sourcestest.MapSession(t, sourcestest.Mapper{
		Viewed: func(v fold.View, line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
			view = v
			evs, err := m.Line(line)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("error %v does not wrap ErrMalformed", err)
				}
				return out, sources.CodeInvalidJSON
			}
			return append(out, evs...), ""
		},
		End: func(out []agentbridge.Event) []agentbridge.Event { return append(out, m.Start()...) },
	}, SessionID(id), Harness, data, nil)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func firstSessionID(data []byte) string {
	for _, l := range bytes.Split(data, []byte("\n")) {
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(l, &r) == nil && validate.ValidID(r.SessionID) {
			return r.SessionID
		}
	}
	return ""
}

func goldenName(path string) string {
	rel, _ := filepath.Rel("testdata", path)
	rel = strings.TrimSuffix(rel, ".jsonl")
	return strings.NewReplacer("/", "__").Replace(rel)
}

// TestGolden replays every fixture transcript (Claude Code 1.0, 2.0 and
// 2.1.x, real recordings and shape catalogues) and compares the events of
// every line and the final snapshot with testdata/golden/<name>.json. Run
// with -update to rewrite them.
func TestGolden(t *testing.T) {
	for _, path := range goldenJournals(t) {
		name := goldenName(path)
		t.Run(name, func(t *testing.T) {
			g, _ := replay(t, path, MapperOptions{InferWaits: true})
			sourcestest.Golden(t, filepath.Join("testdata", "golden", name+".json"), g, *update)
		})
	}
}
