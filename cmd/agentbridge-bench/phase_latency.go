package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/sse"
)

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

// drive appends n writes of line(i) to p with jittered gaps and returns
// the latency of each once every one arrived (or the timeout passed).
// line(i) carries the marker "bench-latency-<i>".
func drive(p string, line func(i int) []byte, n int, gap time.Duration, s *seen) ([]time.Duration, error) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	sent := make([]time.Time, n)
	for i := range n {
		data := line(i)
		sent[i] = time.Now()
		if _, err := f.Write(data); err != nil {
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

// latencyMarker is the text whose arrival the latency phases time.
func latencyMarker(i int) string { return "bench-latency-" + strconv.Itoa(i) }

// phaseLatency times appends to a live Claude Code transcript until they
// reach a stream client: each append a prompt record or, with turns, a
// whole turn (prompt and answer records in one write) of the turn-heavy
// workload, appended to a turn-heavy transcript.
func phaseLatency(cfg *config, root string, turns bool) ([]row, error) {
	dir, err := os.MkdirTemp(root, "latency-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)

	session := sessionUUID(kindClaude, 0)
	line := func(i int) []byte { return promptLine(session, latencyMarker(i), 1_000_000+i) }
	what := "appends"
	var c *corpus
	if turns {
		ts, err := loadTurnSource(kindClaude)
		if err != nil {
			return nil, err
		}
		line = func(i int) []byte { return ts.promptTurn(session, cfg.Turns+1+i, latencyMarker(i)) }
		what = "appended turns (prompt + answer records per write)"
		c, err = generateTurns(filepath.Join(dir, "corpus"), 0, 20, cfg.Turns, 64<<20)
		if err != nil {
			return nil, err
		}
	} else if c, err = generate(filepath.Join(dir, "corpus"), 0, 20, 64<<20); err != nil {
		return nil, err
	}

	// Baseline: a bare fsnotify reader of the same writes.
	bare := []time.Duration{0}
	if !cfg.bridgeOnly {
		if bare, err = bareLatency(cfg, dir, line); err != nil {
			return nil, err
		}
	}
	b, err := startReady(cfg, c, 0, time.Minute)
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
	lat, err := drive(p, line, cfg.Appends, cfg.AppendGap, s)
	if err != nil {
		return nil, err
	}
	p50, p99, mx := pct(lat, 0.5), pct(lat, 0.99), pct(lat, 1)
	b50, b99, bmx := pct(bare, 0.5), pct(bare, 0.99), pct(bare, 1)
	r := float64(p99) / float64(b99)
	return []row{{
		Measure:  fmt.Sprintf("append → stream latency, p50 / p99 / max (%d %s, ~%v apart, SSE over loopback)", cfg.Appends, what, cfg.AppendGap),
		Bridge:   ms(p50) + " / " + ms(p99) + " / " + ms(mx),
		Baseline: ms(b50) + " / " + ms(b99) + " / " + ms(bmx) + " (bare fsnotify reader)",
		Ratio:    fmt.Sprintf("%.1f× (p99)", r),
		Target:   "p99 ≤ 10 ms",
		Verdict:  verdict(p99 <= 10*time.Millisecond, fmt.Sprintf("p99 %.1f ms over", float64((p99-10*time.Millisecond).Microseconds())/1000)),
		Figure:   msf(p99), Unit: "ms (p99)", Slack: 1.5, Floor: 1,
	}}, nil
}

// bareLatency is the baseline: fsnotify on the directory, read from the
// last offset to EOF on every write event.
func bareLatency(cfg *config, dir string, line func(i int) []byte) ([]time.Duration, error) {
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
	lat, err := drive(p, line, cfg.Appends, cfg.AppendGap, s)
	w.Close()
	<-done
	return lat, err
}
