package bridgetest

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// AwaitSubscribers waits until the hub whose metrics reg gathers has n
// stream subscriptions (its agentbridge_stream_clients gauge): a follower
// counted there holds its baseline, so what is published next reaches it
// as news. A test's wait for a state, not for time: it looks every few
// milliseconds and fails after a minute.
func AwaitSubscribers(t testing.TB, reg prometheus.Gatherer, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := -1
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatalf("gather metrics: %v", err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "agentbridge_stream_clients" && len(mf.GetMetric()) == 1 {
				got = int(mf.GetMetric()[0].GetGauge().GetValue())
			}
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub has %d stream subscriptions, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
