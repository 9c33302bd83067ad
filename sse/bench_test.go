package sse

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	r3 "github.com/r3labs/sse/v2"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// BenchmarkFanOut measures publish → delivered to N clients through the
// real handler over loopback (hub.Publish, hub queue, pump, r3 stream per
// connection, per-write deadlines), next to a bare r3labs/sse server (one
// shared stream, AutoReplay off, the same payloads, the same N), in the
// same run. Both publish in windows of at most 256 events in flight and
// wait for every client to receive the window's last event, so neither
// cuts clients off. Reported: bridge-events/s and r3-events/s (deliveries
// per second, N per event) and ratio = bridge / r3.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			bridge := benchBridge(b, n, b.N)
			bare := benchBare(b, n, b.N)
			b.ReportMetric(bridge, "bridge-events/s")
			b.ReportMetric(bare, "r3-events/s")
			b.ReportMetric(bridge/bare, "ratio")
		})
	}
}

const benchWindow = 256

// progress lets the publisher wait until every client has seen an id.
type progress struct {
	cur atomic.Pointer[window]
}

type window struct {
	target    uint64
	remaining atomic.Int64
	done      chan struct{}
}

func (p *progress) expect(target uint64, clients int) *window {
	w := &window{target: target, done: make(chan struct{})}
	w.remaining.Store(int64(clients))
	p.cur.Store(w)
	return w
}

// follow reads an SSE body, reporting ids to p, until the body ends.
func (p *progress) follow(body interface{ Read([]byte) (int, error) }, ready func()) {
	br := bufio.NewReaderSize(body, 64<<10)
	var last *window
	first := true
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		v, ok := bytes.CutPrefix(line, []byte("id: "))
		if !ok {
			continue
		}
		if first {
			first = false
			ready()
		}
		id, _ := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		if w := p.cur.Load(); w != nil && w != last && id >= w.target {
			last = w
			if w.remaining.Add(-1) == 0 {
				close(w.done)
			}
		}
	}
}

// connect opens n streams on url and returns once each has seen its first
// event (after prime, which makes one if the server sends none first).
func connect(b *testing.B, url string, n int, p *progress, prime func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	ready.Add(n)
	tr := &http.Transport{MaxConnsPerHost: 0, DisableCompression: true}
	client := &http.Client{Transport: tr}
	for range n {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var once sync.Once
		wg.Go(func() {
			defer resp.Body.Close()
			p.follow(resp.Body, func() { once.Do(ready.Done) })
		})
	}
	if prime != nil {
		prime()
	}
	ready.Wait()
	b.Cleanup(func() { cancel(); wg.Wait(); tr.CloseIdleConnections() })
}

// run publishes total events in windows and returns deliveries per second.
func run(b *testing.B, n, total int, p *progress, publish func(i int) uint64, last func() uint64) float64 {
	b.Helper()
	start := time.Now()
	for i := 0; i < total; {
		end := min(total, i+benchWindow)
		w := p.expect(last()+uint64(end-i), n)
		for ; i < end; i++ {
			publish(i)
		}
		select {
		case <-w.done:
		case <-time.After(time.Minute):
			b.Fatalf("clients did not receive events up to %d", w.target)
		}
	}
	return float64(total*n) / time.Since(start).Seconds()
}

var benchStatuses = []agentbridge.Status{agentbridge.StatusRunning, agentbridge.StatusWaiting}

func benchSnapshot(i int) agentbridge.Snapshot {
	return agentbridge.Snapshot{
		ID: "0f5c2a8e-6a1b-4c7e-9a31-2d7f0c1e9b44", Harness: "a", PID: 4242,
		Cwd: "/home/dev/src/project", Title: "Fix the flaky integration test", Model: "large-model",
		Status: benchStatuses[i%2], WaitingFor: map[bool]string{true: "Approve shell command"}[i%2 == 1],
	}
}

func benchBridge(b *testing.B, n, total int) float64 {
	b.StopTimer()
	defer b.StartTimer()
	h := hub.New(hub.Options{})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "p", Harnesses: []agentbridge.Harness{{ID: "a"}}}); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(New(h, Options{}))
	b.Cleanup(srv.Close)
	p := &progress{}
	connect(b, srv.URL, n, p, nil) // the initial reset is the first event
	b.StartTimer()
	return run(b, n, total, p, func(i int) uint64 {
		if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: benchSnapshot(i)}}); err != nil {
			b.Fatal(err)
		}
		return 0
	}, h.Revision)
}

func benchBare(b *testing.B, n, total int) float64 {
	b.StopTimer()
	defer b.StartTimer()
	var subscribed sync.WaitGroup
	subscribed.Add(n)
	srv3 := r3.NewWithCallback(func(string, *r3.Subscriber) { subscribed.Done() }, nil)
	srv3.AutoReplay = false
	srv3.CreateStream("s")
	srv := httptest.NewServer(srv3)
	b.Cleanup(srv.Close)
	b.Cleanup(func() { srv3.RemoveStream("s") })
	var id uint64
	data := make([][]byte, 2)
	for i := range data {
		data[i] = fmt.Appendf(nil, `{"source":"p","snapshot":%s}`, mustJSON(benchSnapshot(i)))
	}
	publish := func(i int) uint64 {
		id++
		srv3.Publish("s", &r3.Event{ID: []byte(strconv.FormatUint(id, 10)), Event: []byte("upsert"), Data: data[i%2]})
		return id
	}
	p := &progress{}
	connect(b, srv.URL+"?stream=s", n, p, func() { subscribed.Wait(); publish(0) })
	b.StartTimer()
	return run(b, n, total, p, publish, func() uint64 { return id })
}

func mustJSON(s agentbridge.Snapshot) []byte {
	var buf bytes.Buffer
	buf.WriteString(fmt.Sprintf(`{"id":%q,"harness":%q,"pid":%d,"cwd":%q,"title":%q,"model":%q,"status":%q`,
		s.ID, s.Harness, s.PID, s.Cwd, s.Title, s.Model, s.Status))
	if s.WaitingFor != "" {
		buf.WriteString(fmt.Sprintf(`,"waitingFor":%q`, s.WaitingFor))
	}
	buf.WriteString("}")
	return buf.Bytes()
}
