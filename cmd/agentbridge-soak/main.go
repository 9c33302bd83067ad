// Command agentbridge-soak runs a bridge under a long, mixed load and
// checks that it stays correct and does not grow: many example-agent
// sessions write their journals for a configurable time while stream
// clients connect, follow, resume and drop. At the end every connected
// client's state must equal GET /v1/sessions, and the bridge's heap and
// goroutines must be back near where they were after the warm-up.
//
//	go run ./cmd/agentbridge-soak -duration 2m -sessions 50 -clients 20
//
// It builds ./cmd/agentbridge (or runs -bridge), in a temporary home, on
// a free loopback port. The exit status is 1 when a check fails.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

type options struct {
	duration   time.Duration
	sessions   int
	clients    int
	interval   time.Duration
	bridge     string
	maxGrowth  float64
	growthSlop int64
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 2*time.Minute, "how long sessions write and clients come and go")
	flag.IntVar(&o.sessions, "sessions", 50, "sessions writing at once")
	flag.IntVar(&o.clients, "clients", 20, "stream clients at once")
	flag.DurationVar(&o.interval, "interval", 200*time.Millisecond, "mean time between two records of a session")
	flag.StringVar(&o.bridge, "bridge", "", "bridge binary to run (default: go build ./cmd/agentbridge)")
	flag.Float64Var(&o.maxGrowth, "max-growth", 0.5, "allowed heap growth from the warm-up to the end, as a fraction")
	flag.Int64Var(&o.growthSlop, "growth-slop", 8<<20, "heap growth in bytes always allowed (allocator noise)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, o, log); err != nil {
		log.Error("soak failed", "err", err)
		os.Exit(1)
	}
	log.Info("soak passed")
}

// bridge is the running bridge process.
type bridge struct {
	cmd *exec.Cmd
	*client.Client
}

func startBridge(ctx context.Context, bin, home string) (*bridge, error) {
	cmd := exec.CommandContext(ctx, bin, "serve", "--listen", "127.0.0.1:0", "--linger", "2s")
	cmd.Env = []string{"HOME=" + home, "EXAMPLE_AGENT_HOME=" + filepath.Join(home, "example"), "PATH=" + os.Getenv("PATH")}
	cmd.Stderr = os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bridge: %w", err)
	}
	d, err := bridgetest.WaitDashboard(out)
	if err != nil {
		return nil, err
	}
	if d.Token == "" { // to a pipe the bridge prints only its address
		tok, err := os.ReadFile(filepath.Join(home, ".local", "state", "agentbridge", "token"))
		if err != nil {
			return nil, fmt.Errorf("the bridge's token: %w", err)
		}
		d.Token = strings.TrimSpace(string(tok))
	}
	return &bridge{cmd: cmd, Client: d.Client()}, nil
}

// metric reads one unlabelled value from GET /metrics.
func (b *bridge) metric(ctx context.Context, name string) (float64, error) {
	resp, err := b.Do(ctx, http.MethodGet, "/metrics", nil, nil, "")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("metric %s not found", name)
}

// follower follows the stream and keeps the state it implies.
type follower struct {
	mu    sync.Mutex
	state client.State
}

// follow reads one connection until it ends or ctx does. ndjson picks the
// JSON-lines form; resume sends the last id; slow sleeps between events.
func (f *follower) follow(ctx context.Context, b *bridge, ndjson, resume, slow bool) error {
	o := client.StreamOptions{Format: client.SSE}
	if ndjson {
		o.Format = client.NDJSON
	}
	f.mu.Lock()
	if resume {
		o.Since = f.state.Revision()
	} else {
		f.state = client.State{}
	}
	f.mu.Unlock()
	s, err := b.Open(ctx, o)
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if slow {
			time.Sleep(time.Millisecond)
		}
		f.mu.Lock()
		err = f.state.Apply(ev)
		f.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

func (f *follower) view() []agentbridge.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.Sessions()
}

// writer plays one session after another into dir until ctx ends.
func writer(ctx context.Context, dir string, n int, interval time.Duration, records *atomic.Int64) {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for gen := 0; ctx.Err() == nil; gen++ {
		id := fmt.Sprintf("soak-%03d-%d", n, gen)
		p := filepath.Join(dir, id+".jsonl")
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return
		}
		ts := func() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }
		write := func(format string, args ...any) bool {
			fmt.Fprintf(f, `{"ts":"%s",`+format+"}\n", append([]any{ts()}, args...)...)
			records.Add(1)
			d := time.Duration(r.ExpFloat64() * float64(interval))
			select {
			case <-ctx.Done():
				return false
			case <-time.After(d):
				return true
			}
		}
		ok := write(`"type":"session","title":"soak session %d","model":"example-large-2","cwd":"/work/soak"`, n)
		for turn := 0; ok && turn < 3+r.IntN(5); turn++ {
			ok = write(`"type":"prompt","turnId":"t-%d","text":"turn %d of the soak"`, turn, turn)
			for tool := 0; ok && tool < r.IntN(4); tool++ {
				if ok = write(`"type":"tool_started","toolId":"c-%d-%d","name":"Bash"`, turn, tool); ok {
					ok = write(`"type":"tool_finished","toolId":"c-%d-%d","ok":true`, turn, tool)
				}
			}
			if ok && r.IntN(3) == 0 {
				if ok = write(`"type":"approval_needed","requestId":"r-%d","reason":"run the tests"`, turn); ok {
					ok = write(`"type":"approval_resolved","requestId":"r-%d"`, turn)
				}
			}
			if ok {
				ok = write(`"type":"complete","ok":true,"summary":"done"`)
			}
		}
		f.Close()
		if ok && r.IntN(2) == 0 { // half the sessions end by their journal going away at once
			os.Remove(p)
		}
		// The rest stay until two sessions later: the number of sessions
		// stays bounded, so growth would be a leak, not more work.
		os.Remove(filepath.Join(dir, fmt.Sprintf("soak-%03d-%d.jsonl", n, gen-1)))
	}
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	home, err := os.MkdirTemp("", "agentbridge-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	bin := o.bridge
	if bin == "" {
		bin = filepath.Join(home, "agentbridge")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/agentbridge")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build the bridge: %w", err)
		}
	}
	dir := filepath.Join(home, "example", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	bctx, stopBridge := context.WithCancel(context.Background())
	defer stopBridge()
	b, err := startBridge(bctx, bin, home)
	if err != nil {
		return err
	}
	defer func() { stopBridge(); b.cmd.Wait() }()
	log.Info("bridge up", "addr", b.Addr, "duration", o.duration, "sessions", o.sessions, "clients", o.clients)

	// Writers and churning clients.
	wctx, stopWriters := context.WithTimeout(ctx, o.duration)
	defer stopWriters()
	var records, connects, resumes, drops, clientErrs atomic.Int64
	var wg sync.WaitGroup
	for n := range o.sessions {
		wg.Go(func() { writer(wctx, dir, n, o.interval, &records) })
	}
	churners := make([]*follower, o.clients)
	for n := range o.clients {
		churners[n] = &follower{}
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(n), 11))
			c := churners[n]
			for wctx.Err() == nil {
				resume := r.IntN(2) == 0
				if resume {
					resumes.Add(1)
				}
				fctx, cancel := context.WithTimeout(wctx, time.Duration(500+r.IntN(5000))*time.Millisecond)
				connects.Add(1)
				if err := c.follow(fctx, b, n%2 == 1, resume, n%5 == 4); err != nil && fctx.Err() == nil {
					clientErrs.Add(1)
					log.Warn("client", "n", n, "err", err)
				}
				cancel()
				drops.Add(1)
			}
		})
	}

	// Heap samples once a second from the bridge's own metrics.
	type sample struct {
		at         time.Duration
		heap, gors float64
	}
	var smu sync.Mutex
	var samples []sample
	begin := time.Now()
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for wctx.Err() == nil {
			v, err := b.metric(ctx, "go_memstats_heap_inuse_bytes")
			g, err2 := b.metric(ctx, "go_goroutines")
			if err == nil && err2 == nil {
				smu.Lock()
				samples = append(samples, sample{time.Since(begin), v, g})
				smu.Unlock()
			}
			select {
			case <-wctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	wg.Wait()
	<-sampled
	if ctx.Err() != nil {
		return ctx.Err()
	}
	log.Info("load done", "records", records.Load(), "connects", connects.Load(), "resumes", resumes.Load(), "drops", drops.Load())
	// Baseline: the peak between the warm-up (first fifth, while the ring
	// fills) and the middle; end: the peak of the second half.
	var heap0, heap1, gors0, gors1 float64
	for _, s := range samples {
		switch {
		case s.at < o.duration/5:
		case s.at < o.duration/2:
			heap0, gors0 = max(heap0, s.heap), max(gors0, s.gors)
		default:
			heap1, gors1 = max(heap1, s.heap), max(gors1, s.gors)
		}
	}

	// Every client connects once more, resuming from its last id (or fresh
	// when it has none), and must converge on GET /v1/sessions.
	fctx, stopFinal := context.WithCancel(ctx)
	defer stopFinal()
	finals := churners
	var fwg sync.WaitGroup
	for i, c := range finals {
		fwg.Go(func() {
			if err := c.follow(fctx, b, i%2 == 1, true, false); err != nil && fctx.Err() == nil {
				clientErrs.Add(1)
				log.Warn("final client", "n", i, "err", err)
			}
		})
	}
	var mismatched []int
	deadline := time.Now().Add(30 * time.Second)
	var want client.SessionList
	for {
		var err error
		if want, err = b.Sessions(ctx, nil); err != nil {
			return err
		}
		mismatched = mismatched[:0]
		for i, c := range finals {
			if !cmp.Equal(c.view(), want.Sessions) {
				mismatched = append(mismatched, i)
			}
		}
		if len(mismatched) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopFinal()
	fwg.Wait()

	// Let the bridge settle, then compare its heap and goroutines.
	time.Sleep(2 * time.Second)
	heapSettled, _ := b.metric(ctx, "go_memstats_heap_inuse_bytes")
	gor, _ := b.metric(ctx, "go_goroutines")
	cut, _ := b.metric(ctx, "agentbridge_stream_clients_cut_off_total")
	growth := heap1 - heap0
	log.Info("result", "revision", want.Revision, "sessions", len(want.Sessions), "clients_checked", len(finals),
		"clients_mismatched", len(mismatched), "heap_peak_first_half_bytes", int64(heap0),
		"heap_peak_second_half_bytes", int64(heap1), "heap_settled_bytes", int64(heapSettled), "heap_samples", len(samples),
		"goroutines_peak_first_half", gors0, "goroutines_peak_second_half", gors1, "goroutines_end", gor, "cut_off", cut, "client_errors", clientErrs.Load())
	var errs []error
	if len(mismatched) > 0 {
		sort.Ints(mismatched)
		errs = append(errs, fmt.Errorf("%d of %d clients' state differs from GET /v1/sessions (clients %v)", len(mismatched), len(finals), mismatched))
	}
	if growth > o.maxGrowth*heap0 && growth > float64(o.growthSlop) {
		errs = append(errs, fmt.Errorf("heap peak grew from %.0f (first half) to %.0f bytes (second half): more than %.0f%% and %d bytes", heap0, heap1, o.maxGrowth*100, o.growthSlop))
	}
	if gors1 > gors0*(1+o.maxGrowth)+50 {
		errs = append(errs, fmt.Errorf("goroutines peaked at %v in the first half and %v in the second", gors0, gors1))
	}
	if gor > gors0+50 {
		errs = append(errs, fmt.Errorf("%v goroutines after every client went away, %v at most under load in the first half", gor, gors0))
	}
	if clientErrs.Load() > 0 {
		errs = append(errs, fmt.Errorf("%d client connections failed", clientErrs.Load()))
	}
	return errors.Join(errs...)
}
