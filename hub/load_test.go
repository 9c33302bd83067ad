package hub_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
	"github.com/agentbridge/agentbridge/sse"
)

// loadBridge is a real hub, stream and API over a real listener, with a
// push source "load" (harness "load-agent").
type loadBridge struct{ *bridgetest.Bridge }

const loadToken = "load-token-0123456789abcdef0123"

func newLoadBridge(t *testing.T, ho hub.Options, so sse.Options) *loadBridge {
	t.Helper()
	load := agentbridge.SourceInfo{ID: "load", DisplayName: "Load", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "load-agent", DisplayName: "Load Agent"}}}
	return &loadBridge{bridgetest.Start(t, bridgetest.Options{Push: []agentbridge.SourceInfo{load}, Hub: ho, SSE: so, Token: loadToken,
		Listener: func(l net.Listener) net.Listener { return smallBufListener{l} }})}
}

// smallBufListener gives accepted connections an 8 KiB send buffer, so a
// client that stops reading stalls the server's writes after little data
// instead of after the megabytes loopback autotuning allows.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(8 << 10)
	}
	return c, err
}

func (b *loadBridge) counter(name string) float64 {
	mfs, _ := b.Registry.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += metricValue(m)
			}
			return sum
		}
	}
	return 0
}

func metricValue(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return 0
}

// stuckClient opens a stream and never reads it, with a tiny receive
// buffer so that the server's writes stall soon.
func stuckClient(t *testing.T, host string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetReadBuffer(1024)
	fmt.Fprintf(c, "GET /v1/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", host, loadToken)
	return c
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestLoadWithStuckClients: 4 publishers post 2,000 operations
// over HTTP while 40 stream clients never read and one honest client
// does. The publishers never wait on the clients, the stuck clients are cut
// off (their connections closed), memory stays bounded, and the honest
// client's state ends equal to GET /v1/sessions.
func TestLoadWithStuckClients(t *testing.T) {
	const (
		publishers = 4
		perPub     = 500
		stuck      = 40
		sessions   = 50 // per publisher
	)
	quiet := slog.New(slog.DiscardHandler)
	b := newLoadBridge(t, hub.Options{QueueSize: 256, Logger: quiet}, sse.Options{BufferSize: 64, WriteTimeout: time.Second, Logger: quiet})
	base := heapInUse()
	goroutines0 := runtime.NumGoroutine()

	var conns []net.Conn
	for range stuck {
		conns = append(conns, stuckClient(t, b.Addr))
	}
	// the honest reader resumes at once whenever it is dropped
	hr := bridgetest.Follow(t, b.Client(), client.FollowOptions{Backoff: client.Backoff{Min: time.Millisecond, Max: time.Millisecond}})

	// Every client is subscribed before the first publish: a stream that
	// starts after the load is merely idle, not stuck.
	deadline := time.Now().Add(20 * time.Second)
	for b.counter("agentbridge_stream_clients") < stuck+1 {
		if time.Now().After(deadline) {
			t.Fatalf("only %v of %d stream clients subscribed within 20s", b.counter("agentbridge_stream_clients"), stuck+1)
		}
		time.Sleep(20 * time.Millisecond)
	}

	title := strings.Repeat("a long title to fill buffers ", 4)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	errs := make(chan error, publishers)
	hc := &http.Client{Timeout: 30 * time.Second}
	for p := range publishers {
		wg.Go(func() {
			for i := range perPub {
				id := fmt.Sprintf("p%d-s%02d", p, i%sessions)
				var body string
				if i%17 == 16 {
					body = fmt.Sprintf(`{"op":"remove","sessionId":%q}`, id)
				} else {
					body = fmt.Sprintf(`{"op":"upsert","session":{"id":%q,"harness":"load-agent","status":"running","title":"%s %d"}}`, id, title, i)
				}
				req, _ := http.NewRequest("POST", b.URL+"/v1/sources/load/publish", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+loadToken)
				req.Header.Set("Content-Type", "application/json")
				start := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("publish %s: %d", body, resp.StatusCode)
					return
				}
				d := time.Since(start)
				mu.Lock()
				slowest = max(slowest, d)
				mu.Unlock()
			}
		})
	}
	pubDone := make(chan struct{})
	go func() { wg.Wait(); close(pubDone) }()
	select {
	case <-pubDone:
	case err := <-errs:
		t.Fatalf("publisher: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatalf("publishers did not finish within 90s: they are blocked")
	}
	select {
	case err := <-errs:
		t.Fatalf("publisher: %v", err)
	default:
	}

	// Every stuck client is cut off: the server closes its connection.
	var cutWG sync.WaitGroup
	closed := make(chan bool, stuck)
	for _, c := range conns {
		cutWG.Go(func() {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			n, err := io.Copy(io.Discard, c)
			c.Close()
			closed <- err == nil // EOF: closed by the server
			_ = n
		})
	}
	cutWG.Wait()
	close(closed)
	cut := 0
	for ok := range closed {
		if ok {
			cut++
		}
	}
	if cut != stuck {
		t.Errorf("%d of %d stuck clients were cut off within 30s", cut, stuck)
	}
	// They end either by the hub's queue overflowing (counted as cut off)
	// or by a write timing out in the stream layer; both close the
	// connection, which is what the client sees.
	hubCut := b.counter("agentbridge_stream_clients_cut_off_total")

	// The honest reader converges on GET /v1/sessions.
	hr.Converge(t, b.Client(), nil, func([]agentbridge.Entry) bool { return true })
	hr.Stop()

	grown := int64(heapInUse()) - int64(base)
	t.Logf("slowest publish %v; heap grew %d KiB; honest reader connected %d times; %d of %d stuck clients cut off (%v by the hub's queue)",
		slowest, grown>>10, hr.Record().Resumed+1, cut, stuck, hubCut)
	if grown > 32<<20 {
		t.Errorf("heap in use grew by %d MiB, want under 32 MiB (the ring is bounded at 8 MiB)", grown>>20)
	}
	// No goroutine outlives its client (the idle keep-alive connections of
	// the publishers and the GETs above are not a client's).
	hc.CloseIdleConnections()
	b.Client().HTTP.CloseIdleConnections()
	deadline = time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutines0+5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines0+5 {
		t.Errorf("%d goroutines after every client left, %d before they came", n, goroutines0)
	}
}
