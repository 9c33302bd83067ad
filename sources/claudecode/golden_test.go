package claudecode

import (
	"bufio"
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

// replay feeds a transcript to a mapper line by line, folding every event
// into a fold.Session, and returns the golden event log (one JSON line
// per event or malformed line) and the final snapshot. Any event the fold
// rejects fails the test: the mapper must only emit what the contract
// accepts.
func replay(t *testing.T, path string, o MapperOptions) (log []byte, sess *fold.Session) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	id := firstSessionID(data)
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(path), ".jsonl")
	}
	s := fold.NewSession(SessionID(id), Harness)
	o.View = func() fold.View { return s } // the mapper reads the fold it is checked against
	m := NewMapper(id, o)
	var buf bytes.Buffer
	apply := func(n int, evs []agentbridge.Event) {
		for _, e := range evs {
			if issues := s.Apply(e); len(issues) > 0 {
				t.Errorf("%s line %d: fold rejected %s: %+v", filepath.Base(path), n, e.Kind, issues)
			}
			if vi := validate.Event(e); len(vi) > 0 {
				t.Errorf("%s line %d: invalid %s: %+v", filepath.Base(path), n, e.Kind, vi)
			}
			b, _ := json.Marshal(struct {
				Line  int                      `json:"line"`
				Event agentbridge.Event        `json:"event"`
				Usage *agentbridge.UsageReport `json:"usage,omitempty"`
			}{n, e, e.Usage})
			buf.Write(b)
			buf.WriteByte('\n')
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	n := 0
	for sc.Scan() {
		n++
		evs, err := m.Line(sc.Bytes())
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("line %d: error %v does not wrap ErrMalformed", n, err)
			}
			buf.WriteString(`{"line":` + itoa(n) + `,"malformed":true}` + "\n")
			continue
		}
		apply(n, evs)
	}
	apply(n, m.Start())
	return buf.Bytes(), s
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
// 2.1.x, real recordings and shape catalogues) and compares the events and
// the final snapshot with testdata/golden. Run with -update to rewrite them.
func TestGolden(t *testing.T) {
	for _, path := range goldenJournals(t) {
		name := goldenName(path)
		t.Run(name, func(t *testing.T) {
			log, sess := replay(t, path, MapperOptions{InferWaits: true})
			sj, _ := json.MarshalIndent(sess.Snapshot(), "", "  ")
			sj = append(sj, '\n')
			checkGolden(t, filepath.Join("testdata", "golden", name+".events.jsonl"), log)
			checkGolden(t, filepath.Join("testdata", "golden", name+".snapshot.json"), sj)
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the mapper's output; run go test -run TestGolden -update and review the diff\n%s", path, firstDiff(got, want))
	}
}

func firstDiff(got, want []byte) string {
	g := strings.Split(string(got), "\n")
	w := strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n got: " + a + "\nwant: " + b
		}
	}
	return ""
}
