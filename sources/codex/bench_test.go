package codex

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// BenchmarkRollout maps the largest fixture rollout (many tool calls, big
// outputs) and compares it with a baseline measured in the same run:
// decoding every line whole into a map, which is what a parser without
// targeted structs and type dispatch would at least do. It reports the
// engine's time as a fraction of the baseline's ("of-baseline").
func BenchmarkRollout(b *testing.B) {
	data, err := os.ReadFile("testdata/rollouts/current-many-tools/rollout-many-tools.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var engine, baseline time.Duration
	for b.Loop() {
		t0 := time.Now()
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		e := NewEngine()
		n := 0
		for _, l := range lines {
			n += len(e.Line("k", l))
		}
		n += len(e.Flush("k"))
		t2 := time.Now()
		if n == 0 {
			b.Fatal("no events")
		}
		baseline += t1.Sub(t0)
		engine += t2.Sub(t1)
	}
	if baseline > 0 {
		b.ReportMetric(float64(engine)/float64(baseline), "of-baseline")
	}
}
