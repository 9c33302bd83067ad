package history

import (
	"context"
	"path/filepath"
	"strconv"
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

// BenchmarkRecordScan is a start-up scan's hand-out: one Record of the
// facts of 20 sessions of 1,000 events each (turns, tools, waits, usage),
// then the queue taken as the writer takes it. B/op over the facts is the
// queue's memory per fact.
func BenchmarkRecordScan(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "h.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	facts := scanFacts(20, 1000)
	b.ReportAllocs()
	for b.Loop() {
		s.Record(facts)
		q, _, _ := s.take()
		s.giveBack(q)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(facts)), "ns/fact")
}

// scanFacts is what a scan of n journals of events events each hands out:
// per session, turns of a prompt, a tool with a wait answered, a model
// call's usage and an answer.
func scanFacts(n, events int) []hub.Fact {
	var facts []hub.Fact
	for i := range n {
		ss := &session{source: "claude", id: "00000000-0000-4000-8000-" + strconv.Itoa(100000000000+i), harness: "claude-code", fresh: true}
		at := base + int64(i)*3600_000
		facts = append(facts, ss.fact(at, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: "/home/u/project", Model: "claude-sonnet-4-5"}))
		for j := 0; len(facts) < (i+1)*events; j++ {
			at += 10_000
			id := strconv.Itoa(j)
			facts = append(facts,
				ss.fact(at, agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "turn-" + id}),
				ss.fact(at+1000, agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "toolu_01" + id, Name: "Bash"}),
				ss.fact(at+2000, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w" + id, State: agentbridge.StatusWaiting, Reason: "Allow Bash?"}),
				ss.fact(at+3000, agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w" + id}),
				ss.fact(at+4000, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "toolu_01" + id, Outcome: agentbridge.OutcomeSuccess}),
				ss.fact(at+5000, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(1000, 100, 5000, 0)}),
				ss.fact(at+6000, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}))
		}
		facts = facts[:(i+1)*events]
	}
	return facts
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

// BenchmarkQueries reads a history of 2000 sessions of 10 turns each: the
// default Sessions page and usage by day split by model.
func BenchmarkQueries(b *testing.B) {
	s := running(b, filepath.Join(b.TempDir(), "h.db"), Options{Retention: -1})
	for i := range 2000 {
		ss := &session{source: "x", id: strconv.Itoa(i), harness: "x", model: "gpt-5", fresh: true}
		var facts []hub.Fact
		for j := range 10 {
			at := base + int64(i)*60_000 + int64(j)*1000
			facts = append(facts,
				ss.fact(at, agentbridge.Event{Kind: agentbridge.KindTurnStarted}),
				ss.fact(at+100, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w" + strconv.Itoa(j), State: agentbridge.StatusWaiting}),
				ss.fact(at+200, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(100, 10, 1000, 0)}),
				ss.fact(at+300, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}))
		}
		s.Record(facts)
	}
	if err := s.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Run("Sessions", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Sessions(context.Background(), Query{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Usage", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Usage(context.Background(), UsageQuery{By: agentbridge.UsageByDay, Split: agentbridge.UsageByModel}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
