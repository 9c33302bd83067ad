package claudecode_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/sources/claudecode"
)

// BenchmarkMapperIngest maps every recorded transcript in testdata/journals
// line by line and compares it with a baseline measured in the same
// iteration: a plain encoding/json decode of every line into an `any`,
// which is what a tool without targeted structs does at least. Reported:
// mapper-MB/s, plain-MB/s and x-plain (mapper throughput / plain
// throughput; the ingest target is ≥ 2 end to end, see docs/performance.md).
func BenchmarkMapperIngest(b *testing.B) {
	files, err := filepath.Glob("testdata/journals/*.jsonl")
	if err != nil || len(files) == 0 {
		b.Fatal("no journals", err)
	}
	type journal struct{ lines [][]byte }
	var js []journal
	size := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		size += len(data)
		js = append(js, journal{bytes.Split(bytes.TrimSpace(data), []byte("\n"))})
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var mapper, plain time.Duration
	for b.Loop() {
		t0 := time.Now()
		for _, j := range js {
			for _, l := range j.lines {
				var v any
				_ = json.Unmarshal(l, &v) // some fixtures hold malformed lines on purpose
			}
		}
		t1 := time.Now()
		events := 0
		for _, j := range js {
			m := claudecode.NewMapper("bench-session", claudecode.MapperOptions{InferWaits: true})
			for _, l := range j.lines {
				evs, _ := m.Line(l)
				events += len(evs)
			}
		}
		t2 := time.Now()
		if events == 0 {
			b.Fatal("no events")
		}
		plain += t1.Sub(t0)
		mapper += t2.Sub(t1)
	}
	mb := float64(size) * float64(b.N) / (1 << 20)
	b.ReportMetric(mb/mapper.Seconds(), "mapper-MB/s")
	b.ReportMetric(mb/plain.Seconds(), "plain-MB/s")
	b.ReportMetric(plain.Seconds()/mapper.Seconds(), "x-plain")
}
