package demo

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// TestJournals: every bundled journal is named by a valid session id and
// holds only complete JSON-object lines, each with a type, so that the
// demo and the golden tests replay what the README describes.
func TestJournals(t *testing.T) {
	names, err := fs.Glob(Journals, "*.jsonl")
	if err != nil || len(names) < 5 {
		t.Fatalf("bundled journals %v (%v), want at least 5", names, err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if id := sources.Stem(name, ".jsonl"); !validate.ValidID(id) {
				t.Errorf("session id %q is not an identity value", id)
			}
			data, err := fs.ReadFile(Journals, name)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(data), "\n") {
				t.Errorf("the last line is not terminated")
			}
			sc := bufio.NewScanner(strings.NewReader(string(data)))
			for n := 1; sc.Scan(); n++ {
				var rec struct {
					Type string `json:"type"`
				}
				if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Type == "" {
					t.Errorf("line %d: not a typed record (%v)", n, err)
				}
			}
		})
	}
}
