package hub_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
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
	return benchHubRecorded(b, nil)
}

// benchHubRecorded is benchHub with rec as the hub's recorder (nil: none).
func benchHubRecorded(b *testing.B, rec hub.Recorder) (*hub.Hub, hub.Sink, *hub.Subscription) {
	h := hub.New(hub.Options{Logger: slog.New(slog.DiscardHandler), QueueSize: 1 << 16, Recorder: rec})
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
	busy(b, sink)
	drain := func() int { return drainSub(sub) }
	drain()
	var batchT, eachT time.Duration
	var records, events int
	i := 0
	for b.Loop() {
		t0 := time.Now()
		i = busyRead(b, sink, i)
		t1 := time.Now()
		records += drain()
		events += perRead
		for range perRead {
			if err := sink.Event(busyID, "", busyEvent(i)); err != nil {
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

// The busy session of the read benchmarks: one read of its journal is
// perRead tool events, and it lists 64 subagents.
const busyID, perRead = "busy", 256

// busy starts the busy session.
func busy(b *testing.B, sink hub.Sink) {
	if err := sink.Event(busyID, "bench", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "A busy session"}); err != nil {
		b.Fatal(err)
	}
	for i := range 64 {
		s := strconv.Itoa(i)
		if err := sink.Event(busyID, "", agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: "agent-" + s, ParentAgentID: "root", Type: "general-purpose", Title: "Look into part " + s + " of the change"}); err != nil {
			b.Fatalf("%v %+v", err, err.(*hub.InvalidError).Issues)
		}
	}
}

// busyEvent is the busy session's event i: a tool starts or finishes.
func busyEvent(i int) agentbridge.Event {
	if i%2 == 0 {
		return agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "tool-" + strconv.Itoa(i), Name: "Bash"}
	}
	return agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "tool-" + strconv.Itoa(i-1), Outcome: agentbridge.OutcomeSuccess}
}

// busyRead folds one read of the busy session's journal from event i on
// and commits it; it returns the next event's index.
func busyRead(b *testing.B, sink hub.Sink, i int) int {
	for range perRead {
		if err := sink.Fold(busyID, "", busyEvent(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	sink.Flush()
	return i
}

// drainSub reads what the subscriber was sent and returns how many.
func drainSub(sub *hub.Subscription) (n int) {
	for len(sub.C) > 0 {
		<-sub.C
		n++
	}
	return n
}

// queueRecorder is a recorder that only queues what it is handed, as the
// history's store does (a mutex, an append, a wake-up that never blocks);
// the queue is emptied every few reads, as a writer that keeps up would
// take it.
type queueRecorder struct {
	mu   sync.Mutex
	q    []hub.Fact
	wake chan struct{}
}

func (r *queueRecorder) Record(facts []hub.Fact) {
	r.mu.Lock()
	r.q = append(r.q, facts...)
	if len(r.q) >= 4*perRead {
		clear(r.q)
		r.q = r.q[:0]
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// BenchmarkSinkReadRecorded is BenchmarkSinkRead's batch (one read of a
// busy journal folded and committed) into a hub with a recorder that only
// queues the facts (Options.Recorder) and, in the same run, into one
// without: x-no-recorder is the time with the recorder over the time
// without, ns/event and ns/event-no-recorder the cost of one event in each.
func BenchmarkSinkReadRecorded(b *testing.B) {
	rec := &queueRecorder{wake: make(chan struct{}, 1)}
	_, withRec, subRec := benchHubRecorded(b, rec)
	_, without, sub := benchHub(b)
	busy(b, withRec)
	busy(b, without)
	drainSub(subRec)
	drainSub(sub)
	var recT, noneT time.Duration
	var events int
	i, j := 0, 0
	timed := func(read func()) time.Duration {
		t0 := time.Now()
		read()
		return time.Since(t0)
	}
	for b.Loop() {
		rec := func() { i = busyRead(b, withRec, i) }
		none := func() { j = busyRead(b, without, j) }
		if events%(2*perRead) == 0 { // each goes first every other time
			recT += timed(rec)
			noneT += timed(none)
		} else {
			noneT += timed(none)
			recT += timed(rec)
		}
		drainSub(subRec)
		drainSub(sub)
		events += perRead
	}
	b.ReportMetric(recT.Seconds()/noneT.Seconds(), "x-no-recorder")
	b.ReportMetric(float64(recT.Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(noneT.Nanoseconds())/float64(events), "ns/event-no-recorder")
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
