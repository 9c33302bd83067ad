package history

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// BenchmarkRecord is what the hub pays per commit: Record of one fact,
// the queue taken (as the writer takes it) every 256 facts, a busy
// writer's batch.
func BenchmarkRecord(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "h.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ss := &session{source: "x", id: "1", harness: "x", model: "gpt-5"}
	facts := []hub.Fact{ss.fact(base, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(1, 1, 0, 0)})}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		s.Record(facts)
		if n++; n%256 == 0 {
			q, _, _ := s.take()
			s.giveBack(q)
		}
	}
}

// BenchmarkWrite measures the writer: facts folded and written per
// second, in batches the size of a busy commit.
func BenchmarkWrite(b *testing.B) {
	s := running(b, filepath.Join(b.TempDir(), "h.db"), Options{Retention: -1})
	n := 0
	for b.Loop() {
		s.Record(turnFacts(n))
		n++
		if n%64 == 0 {
			if err := s.Sync(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n*len(turnFacts(0)))/b.Elapsed().Seconds(), "facts/s")
}
