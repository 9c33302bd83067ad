package hub_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hub"
)

// starter is a running source that hands its Start to the benchmark.
type starter struct{ st chan hub.Start }

func (s starter) Info() agentbridge.SourceInfo {
	return agentbridge.SourceInfo{ID: "bench", DisplayName: "Bench", Harnesses: []agentbridge.Harness{{ID: "bench", DisplayName: "Bench"}}}
}

func (s starter) Run(ctx context.Context, st hub.Start) error {
	s.st <- st
	<-ctx.Done()
	return nil
}

// benchHub runs a hub with the bench source until the benchmark ends and
// returns it, the source's Sink and a subscriber of its whole stream.
func benchHub(b *testing.B) (*hub.Hub, hub.Sink, *hub.Subscription) {
	h := hub.New(hub.Options{Logger: slog.New(slog.DiscardHandler), QueueSize: 1 << 16})
	src := starter{st: make(chan hub.Start, 1)}
	if err := h.Add(src); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = h.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	sink := (<-src.st).Publisher
	sub := h.Subscribe(h.Revision(), true, agentbridge.Filter{})
	b.Cleanup(sub.Close)
	return h, sink, sub
}

// BenchmarkSinkRead folds the events of one read of a busy journal (256
// tool events of a session listing 64 subagents) into the hub and commits
// them as one batch (Sink.Fold, then Flush: the lifecycle records and one
// upsert), with one subscriber. The baseline, in the same run, commits
// each event on its own (Publisher.Event: a lifecycle record and an
// upsert of the whole snapshot per event), which is what every event cost
// before reads were batches. x-per-event-commit is the batch's time over
// the baseline's; records/event is what a subscriber received per event.
func BenchmarkSinkRead(b *testing.B) {
	_, sink, sub := benchHub(b)

	const id, perRead = "busy", 256
	if err := sink.Event(id, "bench", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "A busy session"}); err != nil {
		b.Fatal(err)
	}
	for i := range 64 {
		s := strconv.Itoa(i)
		if err := sink.Event(id, "", agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: "agent-" + s, ParentAgentID: "root", Type: "general-purpose", Title: "Look into part " + s + " of the change"}); err != nil {
			b.Fatalf("%v %+v", err, err.(*hub.InvalidError).Issues)
		}
	}
	ev := func(i int) agentbridge.Event {
		if i%2 == 0 {
			return agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "tool-" + strconv.Itoa(i), Name: "Bash"}
		}
		return agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "tool-" + strconv.Itoa(i-1), Outcome: agentbridge.OutcomeSuccess}
	}
	drain := func() (n int) {
		for len(sub.C) > 0 {
			<-sub.C
			n++
		}
		return n
	}
	drain()
	var batchT, eachT time.Duration
	var records, events int
	i := 0
	for b.Loop() {
		t0 := time.Now()
		for range perRead {
			if err := sink.Fold(id, "", ev(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		sink.Flush()
		t1 := time.Now()
		records += drain()
		events += perRead
		for range perRead {
			if err := sink.Event(id, "", ev(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		t2 := time.Now()
		drain()
		batchT += t1.Sub(t0)
		eachT += t2.Sub(t1)
	}
	b.ReportMetric(batchT.Seconds()/eachT.Seconds(), "x-per-event-commit")
	b.ReportMetric(float64(records)/float64(events), "records/event")
	b.ReportMetric(float64(batchT.Nanoseconds())/float64(events), "ns/event")
}

// BenchmarkHook folds a prompt's two hooks (shown, answered: Hub.Hook, as
// the HTTP handler calls it) into a session listing 64 subagents with 16
// tools open, each committed at once, with one subscriber. A hook folds
// into a copy of the session's fold (Sink: Reading a fold), so its cost
// grows with what the session holds; ns/hook is one hook's.
func BenchmarkHook(b *testing.B) {
	h, sink, sub := benchHub(b)

	const id = "busy"
	evs := []agentbridge.Event{{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 1}}
	for i := range 64 {
		s := strconv.Itoa(i)
		evs = append(evs, agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: "agent-" + s, ParentAgentID: "root", Type: "general-purpose", Title: "Look into part " + s + " of the change"})
	}
	for i := range 16 {
		evs = append(evs, agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "tool-" + strconv.Itoa(i), Name: "Bash"})
	}
	for _, e := range evs {
		if err := sink.Fold(id, "bench", e); err != nil {
			b.Fatal(err)
		}
	}
	sink.Flush()
	at := int64(10)
	for b.Loop() {
		at += 2
		if err := h.Hook("bench", id, fold.Hook{Kind: fold.HookAsk, Key: "k1", Reason: "Approve Bash: git push", At: at}); err != nil {
			b.Fatal(err)
		}
		if err := h.Hook("bench", id, fold.Hook{Kind: fold.HookAnswered, Key: "k1", At: at + 1}); err != nil {
			b.Fatal(err)
		}
		for len(sub.C) > 0 {
			<-sub.C
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/hook")
}
