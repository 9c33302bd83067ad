package hub_test

import (
	"encoding/json"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// BenchmarkPublishFanOut publishes lifecycle events of one session into a
// hub with 1, 100 and 1,000 unfiltered subscribers and checks that every
// subscriber gets the very same encoded bytes (one encode per event, not
// one per client). The baseline, measured in the same run, is what one
// encode per client would cost at least: json.Marshal of the record's
// data once per subscriber. Reported: x-per-client-encode (hub time /
// baseline time; below 1 means the hub beats encoding per client) and
// hub-allocs/event (the hub's allocations per published event, measured
// apart from the baseline; they must not grow with the subscribers).
// B/op and allocs/op include the baseline's.
func BenchmarkPublishFanOut(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run("subscribers="+strconv.Itoa(n), func(b *testing.B) {
			h := hub.New(hub.Options{Logger: slog.New(slog.DiscardHandler)})
			info := agentbridge.SourceInfo{ID: "bench", DisplayName: "Bench", Harnesses: []agentbridge.Harness{{ID: "bench", DisplayName: "Bench"}}}
			if err := h.AddPush(info); err != nil {
				b.Fatal(err)
			}
			ev := func(i int) agentbridge.Event {
				if i%2 == 0 {
					return agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "tool-" + strconv.Itoa(i), Name: "Bash"}
				}
				return agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "tool-" + strconv.Itoa(i-1), Outcome: agentbridge.OutcomeSuccess}
			}
			publish := func(i int) {
				if err := h.Publish("bench", []agentbridge.Op{{Op: agentbridge.OpEvent, SessionID: "bench-session", Harness: "bench", Event: ev(i)}}); err != nil {
					b.Fatal(err)
				}
			}
			publish(-2)
			subs := make([]*hub.Subscription, n)
			for i := range subs {
				subs[i] = h.Subscribe(0, false, agentbridge.Filter{})
				defer subs[i].Close()
			}
			drain := func() {
				for _, s := range subs {
					for len(s.C) > 0 {
						<-s.C
					}
				}
			}
			b.ReportAllocs()
			var hubT, baseT time.Duration
			i := 0
			for b.Loop() {
				t0 := time.Now()
				publish(i)
				t1 := time.Now()
				data := struct {
					Source    string            `json:"source"`
					SessionID string            `json:"sessionId"`
					Event     agentbridge.Event `json:"event"`
				}{"bench", "bench-session", ev(i)}
				for range n {
					if _, err := json.Marshal(data); err != nil {
						b.Fatal(err)
					}
				}
				t2 := time.Now()
				hubT += t1.Sub(t0)
				baseT += t2.Sub(t1)
				i++
				if i%256 == 0 {
					drain()
				}
			}
			// The hub's own allocations per event, whatever the subscribers.
			drain()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for range 200 {
				publish(i)
				i++
			}
			runtime.ReadMemStats(&m1)
			drain()
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/200, "hub-allocs/event")
			// One encode for all: every subscriber's last record shares
			// its bytes with the first subscriber's.
			publish(i)
			var first *byte
			for _, s := range subs {
				var last hub.Record
				for len(s.C) > 0 {
					last = <-s.C
				}
				if len(last.Data) == 0 {
					b.Fatal("a subscriber got nothing")
				}
				if first == nil {
					first = &last.Data[0]
				} else if &last.Data[0] != first {
					b.Fatal("subscribers got separately encoded records")
				}
			}
			b.ReportMetric(hubT.Seconds()/baseT.Seconds(), "x-per-client-encode")
		})
	}
}
