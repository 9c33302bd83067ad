package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hub"
)

// BenchmarkMapper measures the mapper on a real recorded transcript against
// a baseline decoding every line fully into a map (what a naive reader
// does), in the same run; "x-naive" is the mapper's time as a fraction of
// the baseline's.
func BenchmarkMapper(b *testing.B) {
	data, err := os.ReadFile("testdata/journals/v2.1-irrlicht-05-bug-c-orphan-toolresult.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	naive := func() {
		for _, l := range lines {
			var m map[string]any
			_ = json.Unmarshal(l, &m)
		}
	}
	mapper := func() {
		m := NewMapper("s", MapperOptions{})
		for _, l := range lines {
			_, _ = m.Line(l)
		}
	}
	var tNaive, tMapper time.Duration
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		naive()
		t1 := time.Now()
		mapper()
		tMapper += time.Since(t1)
		tNaive += t1.Sub(t0)
	}
	b.ReportMetric(float64(tMapper)/float64(tNaive), "x-naive")
}

// nopPublisher takes everything and keeps nothing.
type nopPublisher struct{}

func (nopPublisher) Reset([]*fold.Session) error                   { return nil }
func (nopPublisher) Upsert(*fold.Session) error                    { return nil }
func (nopPublisher) Event(string, string, agentbridge.Event) error { return nil }
func (nopPublisher) Remove(string) error                           { return nil }
func (nopPublisher) Diagnostic(agentbridge.Diagnostic) error       { return nil }
func (nopPublisher) Fold(string, string, agentbridge.Event) error  { return nil }
func (nopPublisher) Flush()                                        {}
func (nopPublisher) Session(string) *fold.Session                  { return nil }
func (nopPublisher) Rescan()                                       {}
func (nopPublisher) Restart(string)                                {}
func (nopPublisher) Hide(string)                                   {}
func (nopPublisher) Show([]string)                                 {}

var _ hub.Sink = nopPublisher{}

// home builds a config dir with recent live transcripts and old ones.
func benchHome(b *testing.B, recent, old int) string {
	dir := b.TempDir()
	rec, err := os.ReadFile("testdata/journals/v2.1-irrlicht-10-full-lifecycle-839f0678.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	proj := filepath.Join(dir, "projects", "-work")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		b.Fatal(err)
	}
	longAgo := time.Now().Add(-90 * 24 * time.Hour)
	for i := range recent + old {
		p := filepath.Join(proj, fmt.Sprintf("%08x-0000-4000-8000-000000000000.jsonl", i))
		if err := os.WriteFile(p, rec, 0o644); err != nil {
			b.Fatal(err)
		}
		if i >= recent {
			if err := os.Chtimes(p, longAgo, longAgo); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir
}

// startup runs a source on dir until its first scan is done.
func startup(b *testing.B, dir string) time.Duration {
	src := New(Options{Home: dir})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(done)
		_ = src.Run(ctx, hub.Start{Enabled: []string{Harness}, Publisher: nopPublisher{}})
	}()
	for scans(src) == 0 {
		time.Sleep(50 * time.Microsecond)
	}
	d := time.Since(t0)
	cancel()
	<-done
	return d
}

// BenchmarkStartup measures the start with 2,000 old transcripts beside 5
// recent ones against a baseline with the 5 recent ones only; "x-baseline"
// is the ratio of the two start times (old transcripts are only stat'ed).
func BenchmarkStartup(b *testing.B) {
	base := benchHome(b, 5, 0)
	many := benchHome(b, 5, 2000)
	var tBase, tMany time.Duration
	b.ResetTimer()
	for range b.N {
		tBase += startup(b, base)
		tMany += startup(b, many)
	}
	b.ReportMetric(float64(tMany)/float64(tBase), "x-baseline")
	b.ReportMetric(float64(tMany.Microseconds())/float64(b.N)/1000, "ms-with-2000-old")
}
