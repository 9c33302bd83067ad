package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	rtrace "runtime/trace"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	r3 "github.com/r3labs/sse/v2"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sse"
)

// row is one line of the results table.
type row struct {
	Measure  string `json:"measure"`
	Bridge   string `json:"bridge"`
	Baseline string `json:"baseline"`
	Ratio    string `json:"ratio"`
	Target   string `json:"target"`
	Verdict  string `json:"verdict"`
}

func verdict(ok bool, miss string) string {
	if ok {
		return "met"
	}
	return "missed: " + miss
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// ---- cold start ----

// listTree lists every journal under root with its metadata (ReadDir and
// a stat per entry): what `ls -lR` does.
func listTree(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			if _, err := d.Info(); err == nil {
				n++
			}
		}
		return nil
	})
	return n, err
}

// decodeTree decodes every line of every journal under root once with
// plain encoding/json: what a naive tool does at start.
func decodeTree(root string) (files int, bytesRead int64, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		bytesRead += int64(len(data))
		return decodeLines(data)
	})
	return files, bytesRead, err
}

// decodeLines is the plain decode: every line into an `any`.
func decodeLines(data []byte) error {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data
		if i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("plain decode: %w", err)
		}
	}
	return nil
}

// coldStart starts the bridge over the corpus until every source sent its
// reset.
func coldStart(c *corpus) (wall, cpu time.Duration, sessions map[string]int, err error) {
	t0, c0 := time.Now(), cpuTime()
	b, err := startReady(c, 0, 5*time.Minute)
	if err != nil {
		return 0, 0, nil, err
	}
	defer b.stop()
	return time.Since(t0), cpuTime() - c0, b.sessions, nil
}

func phaseCold(cfg *config, c *corpus) ([]row, error) {
	// Warm the page cache for every contender alike.
	if _, _, err := decodeTree(c.Root); err != nil {
		return nil, err
	}
	var list, listCPU, dec, decCPU, bridge, bridgeCPU []time.Duration
	var sessions map[string]int
	for range cfg.Repeat {
		t0, c0 := time.Now(), cpuTime()
		n, err := listTree(c.Root)
		if err != nil {
			return nil, err
		}
		list, listCPU = append(list, time.Since(t0)), append(listCPU, cpuTime()-c0)
		if n != c.Old+c.Recent {
			return nil, fmt.Errorf("listed %d journals, want %d", n, c.Old+c.Recent)
		}
		d, dc, s, err := coldStart(c)
		if err != nil {
			return nil, err
		}
		bridge, bridgeCPU, sessions = append(bridge, d), append(bridgeCPU, dc), s
	}
	for range max(1, cfg.Repeat/2) {
		t0, c0 := time.Now(), cpuTime()
		if _, _, err := decodeTree(c.Root); err != nil {
			return nil, err
		}
		dec, decCPU = append(dec, time.Since(t0)), append(decCPU, cpuTime()-c0)
	}
	if got := sessions["claude-code"] + sessions["codex"]; got != c.Recent {
		return nil, fmt.Errorf("the bridge reported %d sessions at start, want the %d recent ones", got, c.Recent)
	}
	mb, ml, md := median(bridge), median(list), median(dec)
	mbc, mlc, mdc := median(bridgeCPU), median(listCPU), median(decCPU)
	what := fmt.Sprintf("%d old + %d recent journals, %.0f MiB", c.Old, c.Recent, float64(c.Bytes)/(1<<20))
	r := float64(mb) / float64(md)
	withCPU := func(wall, cpu time.Duration) string { return ms(wall) + " (" + ms(cpu) + " CPU)" }
	return []row{
		{Measure: "cold start to ready (" + what + ") vs decoding all once", Bridge: withCPU(mb, mbc), Baseline: withCPU(md, mdc) + ", encoding/json, every line",
			Ratio: fmt.Sprintf("%.3f× (CPU: %.3f×)", r, float64(mbc)/float64(mdc)), Target: "≤ 0.1×", Verdict: verdict(r <= 0.1, fmt.Sprintf("%.2f× the target", r/0.1))},
		{Measure: "cold start to ready vs listing the tree", Bridge: withCPU(mb, mbc), Baseline: withCPU(ml, mlc) + ", ReadDir + stat",
			Ratio: fmt.Sprintf("%.1f× (CPU: %.1f×)", float64(mb)/float64(ml), float64(mbc)/float64(mlc)), Target: "—", Verdict: "—"},
	}, nil
}

// ---- ingest ----

func phaseIngest(cfg *config, root string) ([]row, error) {
	var rows []row
	for _, kind := range []string{kindClaude, kindCodex} {
		r, err := ingestOne(cfg, root, kind)
		if err != nil {
			return nil, fmt.Errorf("ingest %s: %w", kind, err)
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// ingestOne measures one large journal appended live (every event
// published to the stream as it comes) and the same journal read at a
// start-up scan (folded, then one reset), each against the plain decode.
func ingestOne(cfg *config, root, kind string) ([]row, error) {
	dir, err := os.MkdirTemp(root, "ingest-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	c := &corpus{Root: dir, ClaudeDir: filepath.Join(dir, "claude"), CodexHome: filepath.Join(dir, "codex")}
	for _, d := range []string{filepath.Join(c.ClaudeDir, "projects", "-home-bench-ingest"), filepath.Join(c.CodexHome, "sessions", "2026", "11", "30")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("make dirs: %w", err)
		}
	}
	id := sessionUUID(kind, 999999)
	marker := "bench-ingest-end-" + kind
	data, err := longJournal(kind, id, cfg.ingestBytes, marker)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(c.ClaudeDir, "projects", "-home-bench-ingest", id+".jsonl")
	if kind == kindCodex {
		p = filepath.Join(c.CodexHome, "sessions", "2026", "11", "30", "rollout-2026-11-30T10-00-00-"+id+".jsonl")
	}
	mbs := func(d time.Duration) float64 { return float64(len(data)) / (1 << 20) / d.Seconds() }

	var base, baseCPU, live, liveCPU, scan, scanCPU []time.Duration
	var records, recBytes int
	for range cfg.Repeat {
		t0, c0 := time.Now(), cpuTime()
		if err := decodeLines(data); err != nil {
			return nil, err
		}
		base = append(base, time.Since(t0))
		baseCPU = append(baseCPU, cpuTime()-c0)

		// Live: appended in 1 MiB writes after the bridge is ready.
		b, err := startReady(c, 1<<17, time.Minute)
		if err != nil {
			return nil, err
		}
		t0, c0 = time.Now(), cpuTime()
		if err := appendChunks(p, data, 1<<20); err != nil {
			b.stop()
			return nil, err
		}
		at, n, nb, err := b.waitFor([]byte(marker), 5*time.Minute)
		b.stop()
		if err != nil {
			return nil, err
		}
		live = append(live, at.Sub(t0))
		liveCPU = append(liveCPU, cpuTime()-c0)
		records, recBytes = n, nb

		// Scan: the same journal present when the bridge starts.
		t0, c0 = time.Now(), cpuTime()
		b, err = startReady(c, 0, 5*time.Minute)
		d, dc := time.Since(t0), cpuTime()-c0
		if err != nil {
			return nil, err
		}
		b.stop()
		scan, scanCPU = append(scan, d), append(scanCPU, dc)
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("remove journal: %w", err)
		}
	}
	name := "Claude Code transcript"
	if kind == kindCodex {
		name = "Codex rollout"
	}
	mbase, mbaseCPU := mbs(median(base)), mbs(median(baseCPU))
	mk := func(what string, wall, cpu []time.Duration) row {
		mb, mc := mbs(median(wall)), mbs(median(cpu))
		r := mb / mbase
		return row{
			Measure:  what,
			Bridge:   fmt.Sprintf("%.0f MB/s (%.0f MB per CPU-second)", mb, mc),
			Baseline: fmt.Sprintf("%.0f MB/s (%.0f MB per CPU-second; encoding/json per line)", mbase, mbaseCPU),
			Ratio:    fmt.Sprintf("%.2f× (CPU: %.2f×)", r, mc/mbaseCPU), Target: "≥ 2×",
			Verdict: verdict(r >= 2, fmt.Sprintf("%.0f%% of the target", 100*r/2)),
		}
	}
	return []row{
		mk(fmt.Sprintf("ingest of one live %s (%.0f MiB appended after start; %d stream records, %.0f MiB of stream data)",
			name, float64(len(data))/(1<<20), records, float64(recBytes)/(1<<20)), live, liveCPU),
		mk(fmt.Sprintf("ingest of the same %s at a start-up scan (folded, then one reset)", name), scan, scanCPU),
	}, nil
}

// appendChunks creates p and appends data in chunks, as a live writer does.
func appendChunks(p string, data []byte, chunk int) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	for len(data) > 0 {
		n := min(chunk, len(data))
		if _, err := f.Write(data[:n]); err != nil {
			f.Close()
			return fmt.Errorf("append: %w", err)
		}
		data = data[n:]
	}
	return f.Close()
}

// ---- append → stream latency ----

// seen records when each numbered latency marker first arrived.
type seen struct {
	mu sync.Mutex
	at []time.Time
}

func newSeen(n int) *seen { return &seen{at: make([]time.Time, n)} }

// mark records the arrival of every marker "bench-latency-<i>" in data.
func (s *seen) mark(data []byte) {
	now := time.Now()
	for {
		i := bytes.Index(data, []byte("bench-latency-"))
		if i < 0 {
			return
		}
		data = data[i+len("bench-latency-"):]
		j := 0
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
		k, err := strconv.Atoi(string(data[:j]))
		s.mu.Lock()
		if err == nil && k >= 0 && k < len(s.at) && s.at[k].IsZero() {
			s.at[k] = now
		}
		s.mu.Unlock()
	}
}

func (s *seen) all() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.at {
		if t.IsZero() {
			return false
		}
	}
	return true
}

// drive appends n prompt lines to p with jittered gaps and returns the
// latency of each once every one arrived (or the timeout passed).
func drive(p, session string, n int, gap time.Duration, s *seen) ([]time.Duration, error) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	sent := make([]time.Time, n)
	for i := range n {
		line := promptLine(session, "bench-latency-"+strconv.Itoa(i), 1_000_000+i)
		sent[i] = time.Now()
		if _, err := f.Write(line); err != nil {
			return nil, fmt.Errorf("append: %w", err)
		}
		time.Sleep(gap/2 + rand.N(gap))
	}
	deadline := time.Now().Add(10 * time.Second)
	for !s.all() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var out []time.Duration
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range s.at {
		if t.IsZero() {
			return nil, fmt.Errorf("append %d never arrived", i)
		}
		out = append(out, t.Sub(sent[i]))
	}
	return out, nil
}

func pct(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

func phaseLatency(cfg *config, root string) ([]row, error) {
	dir, err := os.MkdirTemp(root, "latency-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)

	// Baseline: a bare fsnotify reader of the same kind of file.
	bare, err := bareLatency(cfg, dir)
	if err != nil {
		return nil, err
	}

	c, err := generate(filepath.Join(dir, "corpus"), 0, 20, 64<<20)
	if err != nil {
		return nil, err
	}
	b, err := startReady(c, 0, time.Minute)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	url := b.serve(sse.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := dial(ctx, loopbackClient(), url+"/")
	if err != nil {
		return nil, err
	}
	s := newSeen(cfg.Appends)
	go cl.read(false, func(ev client.Event) { s.mark(ev.Data) })
	<-cl.ready
	p := c.journalPath(kindClaude, 0)
	lat, err := drive(p, sessionUUID(kindClaude, 0), cfg.Appends, cfg.AppendGap, s)
	if err != nil {
		return nil, err
	}
	p50, p99, mx := pct(lat, 0.5), pct(lat, 0.99), pct(lat, 1)
	b50, b99, bmx := pct(bare, 0.5), pct(bare, 0.99), pct(bare, 1)
	r := float64(p99) / float64(b99)
	return []row{{
		Measure:  fmt.Sprintf("append → stream latency, p50 / p99 / max (%d appends, ~%v apart, SSE over loopback)", cfg.Appends, cfg.AppendGap),
		Bridge:   ms(p50) + " / " + ms(p99) + " / " + ms(mx),
		Baseline: ms(b50) + " / " + ms(b99) + " / " + ms(bmx) + " (bare fsnotify reader)",
		Ratio:    fmt.Sprintf("%.1f× (p99)", r),
		Target:   "p99 ≤ 10 ms",
		Verdict:  verdict(p99 <= 10*time.Millisecond, fmt.Sprintf("p99 %.1f ms over", float64((p99-10*time.Millisecond).Microseconds())/1000)),
	}}, nil
}

// bareLatency is the baseline: fsnotify on the directory, read from the
// last offset to EOF on every write event.
func bareLatency(cfg *config, dir string) ([]time.Duration, error) {
	bd := filepath.Join(dir, "bare")
	if err := os.MkdirAll(bd, 0o755); err != nil {
		return nil, fmt.Errorf("make dir: %w", err)
	}
	p := filepath.Join(bd, "journal.jsonl")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		return nil, fmt.Errorf("make journal: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("fsnotify: %w", err)
	}
	if err := w.Add(bd); err != nil {
		w.Close()
		return nil, fmt.Errorf("fsnotify: %w", err)
	}
	s := newSeen(cfg.Appends)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.Open(p)
		if err != nil {
			return
		}
		defer f.Close()
		buf := make([]byte, 64<<10)
		for ev := range w.Events {
			if ev.Name != p || !ev.Has(fsnotify.Write) {
				continue
			}
			for {
				n, err := f.Read(buf)
				if n > 0 {
					s.mark(buf[:n])
				}
				if err != nil || n == 0 {
					break
				}
			}
		}
	}()
	lat, err := drive(p, "bare", cfg.Appends, cfg.AppendGap, s)
	w.Close()
	<-done
	return lat, err
}

// ---- fan-out ----

func phaseFanout(cfg *config) ([]row, error) {
	var rows []row
	for _, n := range cfg.Clients {
		events := cfg.FanoutEvents
		if n >= 1000 {
			events = max(256, events/4)
		}
		got, err := fanoutBridge(n, events)
		if err != nil {
			return nil, fmt.Errorf("fan-out to %d clients: %w", n, err)
		}
		base, err := fanoutR3(n, events)
		if err != nil {
			// The bare r3labs server is only the baseline, and it is known
			// to stall now and then (notes/hub.md §1.4-1.5): measure it once
			// more rather than lose the run, and say so.
			fmt.Fprintf(os.Stderr, "bare r3 fan-out to %d clients failed (%v); measuring it once more\n", n, err)
			base, err = fanoutR3(n, events)
		}
		if err != nil {
			return nil, fmt.Errorf("bare r3 fan-out to %d clients: %w", n, err)
		}
		rows = append(rows, row{
			Measure:  fmt.Sprintf("publish → delivered to %d stream client(s) (%d events each)", n, events),
			Bridge:   fmt.Sprintf("%.0f events/s", got),
			Baseline: fmt.Sprintf("%.0f events/s (bare r3labs/sse, one shared stream)", base),
			Ratio:    fmt.Sprintf("%.2f×", got/base), Target: "—", Verdict: "—",
		})
	}
	encodes, shared, allocs, err := encodeOnce(1000, min(200, cfg.FanoutEvents))
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{
		Measure:  "stream records encoded per event, 1,000 subscribers",
		Bridge:   fmt.Sprintf("%d encode(s); %d of 1,000 share one buffer; %.1f allocs/event in the hub", encodes, shared, allocs),
		Baseline: "1,000 (one encode per client)",
		Ratio:    fmt.Sprintf("%.4f×", float64(encodes)/1000), Target: "1 encode per event",
		Verdict: verdict(encodes == 1 && shared == 1000, "clients do not share one encoding"),
	})
	return rows, nil
}

const window = 256 // events in flight before the publisher waits for every client

// progress lets a publisher wait until every client saw a revision. A
// client may see the revision before the publisher asks for it (a fast
// stream): arm counts those at once.
type progress struct {
	target  atomic.Uint64
	left    atomic.Int64
	done    chan struct{}
	seen    []atomic.Uint64 // per client: the highest id it saw
	reached []atomic.Uint64 // per client: the last target it was counted for
}

func newProgress(clients int) *progress {
	return &progress{seen: make([]atomic.Uint64, clients), reached: make([]atomic.Uint64, clients)}
}

func (p *progress) arm(target uint64) chan struct{} {
	ch := make(chan struct{})
	p.done = ch
	p.left.Store(int64(len(p.seen)))
	p.target.Store(target)
	for i := range p.seen {
		p.check(i, target)
	}
	return ch
}

// check counts client i once for target t when it saw t.
func (p *progress) check(i int, t uint64) {
	if p.seen[i].Load() >= t && p.reached[i].Swap(t) != t && p.left.Add(-1) == 0 {
		close(p.done)
	}
}

// follower returns client i's callback.
func (p *progress) follower(i int) func(client.Event) {
	return func(ev client.Event) {
		p.seen[i].Store(ev.ID)
		if t := p.target.Load(); t != 0 && ev.ID >= t {
			p.check(i, t)
		}
	}
}

func fanoutBridge(n, events int) (float64, error) {
	h := hub.New(hub.Options{Logger: quiet()})
	info := agentbridge.SourceInfo{ID: "bench", DisplayName: "Bench", Harnesses: []agentbridge.Harness{{ID: "bench", DisplayName: "Bench"}}}
	if err := h.AddPush(info); err != nil {
		return 0, fmt.Errorf("add push source: %w", err)
	}
	publish := func(i int) error {
		e := agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "tool-" + strconv.Itoa(i), Name: "Bash"}
		if i%2 == 1 {
			e = agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "tool-" + strconv.Itoa(i-1), Outcome: agentbridge.OutcomeSuccess}
		}
		return h.Publish("bench", []agentbridge.Op{{Op: agentbridge.OpEvent, SessionID: "bench-session", Harness: "bench", Event: e}})
	}
	if err := publish(-2); err != nil { // the session exists before clients connect
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = h.Run(ctx) }()
	b := &bridge{hub: h}
	url := b.serve(sse.Options{})
	defer b.srv.Close()
	defer b.srv.CloseClientConnections()
	return fanout(url+"/", n, events, publish, func() uint64 { return h.Revision() }, firstEvent)
}

func fanoutR3(n, events int) (float64, error) {
	var subscribed atomic.Int64
	srv := r3.NewWithCallback(func(string, *r3.Subscriber) { subscribed.Add(1) }, nil)
	srv.AutoReplay = false
	srv.AutoStream = false
	srv.BufferSize = 1024
	srv.CreateStream("s")
	defer srv.Close()
	ts := newServer(srv)
	defer ts.Close()
	defer ts.CloseClientConnections()
	var rev atomic.Uint64
	rev.Store(1)
	data := []byte(`{"source":"bench","sessionId":"bench-session","event":{"kind":"tool.started","toolId":"tool-0","name":"Bash"}}`)
	publish := func(int) error {
		id := rev.Add(1)
		srv.Publish("s", &r3.Event{ID: strconv.AppendUint(nil, id, 10), Event: []byte("lifecycle"), Data: data})
		return nil
	}
	return fanout(ts.URL+"/?stream=s", n, events, publish, rev.Load, func([]*sseClient) error {
		deadline := time.Now().Add(30 * time.Second)
		for subscribed.Load() < int64(n) {
			if time.Now().After(deadline) {
				return errors.New("clients did not subscribe")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	})
}

// fanout connects n clients, publishes events in windows and returns the
// deliveries per second (events × clients / elapsed).
func fanout(url string, n, events int, publish func(int) error, rev func() uint64, ready func([]*sseClient) error) (float64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := loopbackClient()
	defer client.CloseIdleConnections()
	p := newProgress(n)
	var clients []*sseClient
	var ended atomic.Int64 // streams that ended before the last window
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range n {
		c, err := dial(ctx, client, url)
		if err != nil {
			return 0, err
		}
		clients = append(clients, c)
		f := p.follower(i)
		wg.Go(func() { c.read(true, f); ended.Add(1) })
	}
	if err := ready(clients); err != nil {
		return 0, err
	}
	var before int64
	for _, c := range clients {
		before += c.events.Load()
	}
	t0 := time.Now()
	for i := 0; i < events; i += window {
		for j := i; j < min(i+window, events); j++ {
			if err := publish(j); err != nil {
				return 0, err
			}
		}
		done := p.arm(rev())
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			return 0, fmt.Errorf("clients did not keep up (%d left, %d of them cut off)", p.left.Load(), ended.Load())
		}
	}
	el := time.Since(t0)
	var after int64
	for _, c := range clients {
		after += c.events.Load()
	}
	return float64(after-before) / el.Seconds(), nil
}

// firstEvent waits until every client got its first event.
func firstEvent(clients []*sseClient) error {
	for _, c := range clients {
		select {
		case <-c.ready:
		case <-time.After(30 * time.Second):
			return errors.New("a client got no first event")
		}
	}
	return nil
}

// encodeOnce subscribes n clients directly to the hub, publishes events
// and checks that every client got the very same encoded bytes. It
// returns the distinct encodings per event, how many clients share the
// first one, and the hub's allocations per event.
func encodeOnce(n, events int) (encodes, shared int, allocsPerEvent float64, err error) {
	h := hub.New(hub.Options{Logger: quiet()})
	info := agentbridge.SourceInfo{ID: "bench", DisplayName: "Bench", Harnesses: []agentbridge.Harness{{ID: "bench", DisplayName: "Bench"}}}
	if err := h.AddPush(info); err != nil {
		return 0, 0, 0, fmt.Errorf("add push source: %w", err)
	}
	pub := func(i int) error {
		e := agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "tool-" + strconv.Itoa(i), Name: "Bash"}
		if i%2 == 1 {
			e = agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "tool-" + strconv.Itoa(i-1), Outcome: agentbridge.OutcomeSuccess}
		}
		return h.Publish("bench", []agentbridge.Op{{Op: agentbridge.OpEvent, SessionID: "bench-session", Harness: "bench", Event: e}})
	}
	if err := pub(-2); err != nil {
		return 0, 0, 0, err
	}
	subs := make([]*hub.Subscription, n)
	for i := range subs {
		subs[i] = h.Subscribe(0, false, agentbridge.Filter{})
		defer subs[i].Close()
	}
	var m0, m1 runtimeMem
	m0.read()
	for i := range events {
		if err := pub(i); err != nil {
			return 0, 0, 0, err
		}
		if i%window == window-1 {
			for _, s := range subs {
				for len(s.C) > 0 {
					<-s.C
				}
			}
		}
	}
	m1.read()
	if err := pub(events); err != nil {
		return 0, 0, 0, err
	}
	ptrs := map[*byte]int{}
	for _, s := range subs {
		var last hub.Record
		for len(s.C) > 0 {
			last = <-s.C
		}
		if len(last.Data) == 0 {
			return 0, 0, 0, errors.New("a subscriber got nothing")
		}
		ptrs[&last.Data[0]]++
	}
	for _, c := range ptrs {
		shared = max(shared, c)
	}
	return len(ptrs), shared, float64(m1.mallocs-m0.mallocs) / float64(events), nil
}

// ---- idle ----

func phaseIdle(cfg *config, c *corpus) ([]row, error) {
	// Baseline: a bare fsnotify watcher on every directory of the corpus,
	// doing nothing else.
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("fsnotify: %w", err)
	}
	dirs := 0
	err = filepath.WalkDir(c.Root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs++
			return w.Add(p)
		}
		return err
	})
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("watch corpus: %w", err)
	}
	time.Sleep(cfg.settle)
	baseCPU, baseWakes, baseSysmon := measureIdle(cfg.Idle, "bare fsnotify watcher", "")
	w.Close()

	b, url, err := startServing(c)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := dial(ctx, loopbackClient(), url+"/")
	if err != nil {
		return nil, err
	}
	go cl.read(true, nil)
	<-cl.ready
	runtime.GC()
	time.Sleep(cfg.settle)
	pings0 := cl.pings.Load()
	cpu, wakes, sysmon := measureIdle(cfg.Idle, "bridge", cfg.IdleTrace)
	pings := cl.pings.Load() - pings0
	share := cpu.Seconds() / cfg.Idle.Seconds()
	return []row{{
		Measure: fmt.Sprintf("idle over %v: %d journals in %d directories watched, 1 stream client", cfg.Idle, c.Old+c.Recent, dirs),
		Bridge: fmt.Sprintf("%.1f ms CPU (%.3f%% of a core), %d context switches (%d of them the Go runtime's sysmon thread), %d heartbeat(s) sent",
			float64(cpu.Microseconds())/1000, 100*share, wakes, sysmon, pings),
		Baseline: fmt.Sprintf("%.1f ms CPU, %d context switches (%d sysmon) (bare fsnotify watcher on the same directories)",
			float64(baseCPU.Microseconds())/1000, baseWakes, baseSysmon),
		Ratio: fmt.Sprintf("%+d context switches (%+d outside sysmon)", int64(wakes)-int64(baseWakes),
			(int64(wakes)-int64(sysmon))-(int64(baseWakes)-int64(baseSysmon))),
		Target:  "≈ 0 CPU; no wake-ups beyond the 15 s heartbeat",
		Verdict: verdict(share < 0.001, fmt.Sprintf("%.2f%% of a core", 100*share)),
	}}, nil
}

// measureIdle sleeps for d and returns the process's CPU time and context
// switches meanwhile. It writes to stderr what each thread did in the
// window (context switches, CPU ticks, the syscall it sleeps in at the
// end), labelled with what, and, when trace is set, a runtime trace of the
// window into that file (the tracer adds wake-ups of its own). It also
// returns the switches of the runtime's sysmon thread (sysmonTID).
func measureIdle(d time.Duration, what, trace string) (cpu time.Duration, switches, sysmon uint64) {
	var tf *os.File
	if trace != "" {
		var err error
		if tf, err = os.Create(trace); err != nil {
			fmt.Fprintln(os.Stderr, "idle trace:", err)
		} else if err := rtrace.Start(tf); err != nil {
			fmt.Fprintln(os.Stderr, "idle trace:", err)
			tf.Close()
			tf = nil
		}
	}
	t0 := threadStats()
	c0, w0 := cpuTime(), ctxSwitches()
	time.Sleep(d)
	c1, w1 := cpuTime(), ctxSwitches()
	t1 := threadStats()
	if tf != nil {
		rtrace.Stop()
		tf.Close()
	}
	ds := threadDeltas(t0, t1)
	sm := sysmonTID(slices.Collect(maps.Keys(t1)), os.Getpid())
	for _, t := range ds {
		if t.tid == sm {
			sysmon = t.switches
		}
	}
	fmt.Fprintf(os.Stderr, "idle, %s: %d threads, %d switched or ran in %v:\n%s", what, len(t1), len(ds), d, formatDeltas(ds, os.Getpid(), sm))
	return c1 - c0, w1 - w0, sysmon
}

// ---- memory ----

func phaseRSS(cfg *config, c *corpus) ([]row, error) {
	runtime.GC()
	rss0, _ := memStatus()
	b, url, err := startServing(c)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	if got := b.sessions["claude-code"] + b.sessions["codex"]; got != c.Recent {
		return nil, fmt.Errorf("the bridge holds %d sessions, want %d", got, c.Recent)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := loopbackClient()
	var clients []*sseClient
	for range cfg.RSSClients {
		cl, err := dial(ctx, client, url+"/")
		if err != nil {
			return nil, err
		}
		go cl.read(true, nil)
		clients = append(clients, cl)
	}
	for _, cl := range clients {
		<-cl.ready
	}
	time.Sleep(cfg.settle)
	rss, hwm := memStatus()
	var m runtimeMem
	m.read()
	mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
	return []row{{
		Measure:  fmt.Sprintf("memory with %d live sessions and %d stream clients", c.Recent, cfg.RSSClients),
		Bridge:   fmt.Sprintf("VmRSS %.1f MiB, VmHWM %.1f MiB (Go heap in use %.1f MiB)", mib(rss), mib(hwm), mib(m.heapInuse)),
		Baseline: fmt.Sprintf("%.1f MiB (this process before the bridge started)", mib(rss0)),
		Ratio:    fmt.Sprintf("%.1f× the baseline", float64(rss)/float64(rss0)),
		Target:   "RSS ≤ 80 MiB",
		Verdict:  verdict(mib(rss) <= 80, fmt.Sprintf("%.1f MiB over", mib(rss)-80)),
	}}, nil
}

// ---- stream ----

// phaseStream appends a large Claude Code transcript (in 1 MiB writes)
// while one SSE client on loopback reads the stream with the handler's
// defaults, and counts how often the client is cut off for not keeping up
// (it then resumes from the last id it saw, as EventSource does) before it
// reads the record of the transcript's last line.
func phaseStream(cfg *config, root string) ([]row, error) {
	dir, err := os.MkdirTemp(root, "stream-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	c := &corpus{Root: dir, ClaudeDir: filepath.Join(dir, "claude"), CodexHome: filepath.Join(dir, "codex")}
	pdir := filepath.Join(c.ClaudeDir, "projects", "-home-bench-stream")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, fmt.Errorf("make dirs: %w", err)
	}
	id := sessionUUID(kindClaude, 999998)
	marker := "bench-stream-end"
	data, err := longJournal(kindClaude, id, cfg.streamBytes, marker)
	if err != nil {
		return nil, err
	}
	b, url, err := startServing(c)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hc := loopbackClient()

	var cutoffs, records int
	var last uint64
	var seen atomic.Bool
	written := make(chan error, 1)
	t0 := time.Now()
	var at time.Time
	for first := true; !seen.Load(); first = false {
		if !first {
			cutoffs++
		}
		cl, err := dialFrom(ctx, hc, url+"/", last)
		if err != nil {
			return nil, err
		}
		if first {
			go func() { written <- appendChunks(filepath.Join(pdir, id+".jsonl"), data, 1<<20) }()
		}
		cl.read(false, func(ev client.Event) {
			records++
			last = ev.ID
			if !seen.Load() && bytes.Contains(ev.Data, []byte(marker)) {
				seen.Store(true)
				at = time.Now()
				cl.resp.Body.Close()
			}
		})
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the stream client did not see the end of the transcript (%d records, %d cut-offs)", records, cutoffs)
		}
	}
	if err := <-written; err != nil {
		return nil, err
	}
	mb := float64(len(data)) / (1 << 20)
	return []row{{
		Measure: fmt.Sprintf("stream client reading while %.0f MiB of Claude Code transcript are appended (SSE over loopback, default buffers)", mb),
		Bridge: fmt.Sprintf("%d cut-off(s); %d records read, the last line's after %.0f ms (%.0f MB/s)",
			cutoffs, records, float64(at.Sub(t0).Microseconds())/1000, mb/at.Sub(t0).Seconds()),
		Baseline: "—",
		Ratio:    "—",
		Target:   "0 cut-offs",
		Verdict:  verdict(cutoffs == 0, fmt.Sprintf("%d cut-off(s)", cutoffs)),
	}}, nil
}
