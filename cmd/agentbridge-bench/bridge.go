package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/history"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources/claudecode"
	"github.com/agentbridge/agentbridge/sources/codex"
	"github.com/agentbridge/agentbridge/sse"
)

// bridge is the real hub with the Claude Code and Codex sources, run
// in-process over a corpus, optionally with the real SSE handler on a
// loopback server, and with the history kept as the bridge keeps it by
// default (history.enabled) unless the run turned it off.
type bridge struct {
	hub    *hub.Hub
	sub    *hub.Subscription // opened before Run: sees the sources' resets
	cancel context.CancelFunc
	done   chan struct{}
	srv    *httptest.Server
	// sessions counts the sessions of each source's first live reset.
	sessions map[string]int

	hist     *history.Store // nil: the history is off
	histReg  *prometheus.Registry
	histOpen [2]time.Duration // history.Open's wall and CPU time
	histStop context.CancelFunc
	histDone chan struct{}
}

// startBridge builds the hub with both sources over c and runs it. queue
// is the hub's per-subscriber queue (0: the default). With cfg.History
// the hub records into a history store at cfg.stateDir/history.db (the
// same database for every bridge of a phase: a start after the first is
// a restart over a kept history), as agentbridge serve wires it.
func startBridge(cfg *config, c *corpus, queue int) (*bridge, error) {
	log := slog.New(slog.DiscardHandler)
	b := &bridge{done: make(chan struct{}), sessions: map[string]int{}}
	o := hub.Options{Logger: log, QueueSize: queue}
	if cfg.History {
		if err := b.openHistory(cfg, log); err != nil {
			return nil, err
		}
		o.Recorder = b.hist
	}
	h := hub.New(o)
	for _, src := range []hub.Source{
		claudecode.New(claudecode.Options{Home: c.ClaudeDir, Logger: log}),
		codex.New(codex.Options{Home: c.CodexHome, Logger: log}),
	} {
		if err := h.Add(src); err != nil {
			b.stopHistory()
			return nil, fmt.Errorf("add source %s: %w", src.Info().ID, err)
		}
	}
	b.hub, b.sub = h, h.Subscribe(0, false, agentbridge.Filter{})
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() {
		defer close(b.done)
		_ = h.Run(ctx)
	}()
	return b, nil
}

// openHistory opens the phase's history database and runs its writer.
func (b *bridge) openHistory(cfg *config, log *slog.Logger) error {
	if cfg.stateDir == "" {
		return errors.New("history on without a state directory")
	}
	b.histReg = prometheus.NewRegistry()
	t0, c0 := time.Now(), cpuTime()
	st, err := history.Open(filepath.Join(cfg.stateDir, "history.db"), history.Options{Logger: log, Registry: b.histReg})
	if err != nil {
		return fmt.Errorf("open the history: %w", err)
	}
	b.histOpen = [2]time.Duration{time.Since(t0), cpuTime() - c0}
	ctx, stop := context.WithCancel(context.Background())
	b.hist, b.histStop, b.histDone = st, stop, make(chan struct{})
	go func() {
		defer close(b.histDone)
		_ = st.Run(ctx)
	}()
	return nil
}

// stopHistory ends the history's writer (it writes what is queued) and
// closes the database, as serve does after the sources ended.
func (b *bridge) stopHistory() {
	if b.hist == nil {
		return
	}
	b.histStop()
	<-b.histDone
	_ = b.hist.Close()
	b.hist = nil
}

// historyCounts are the history's own counters (its Prometheus metrics).
type historyCounts struct{ written, dropped float64 }

// historyCounts reads the history's counters of written and dropped
// facts, as /metrics shows them.
func (b *bridge) historyCounts() (historyCounts, error) {
	var hc historyCounts
	mfs, err := b.histReg.Gather()
	if err != nil {
		return hc, fmt.Errorf("history metrics: %w", err)
	}
	for _, mf := range mfs {
		if len(mf.GetMetric()) == 0 {
			continue
		}
		v := mf.GetMetric()[0].GetCounter().GetValue()
		switch mf.GetName() {
		case "agentbridge_history_written_facts_total":
			hc.written = v
		case "agentbridge_history_dropped_facts_total":
			hc.dropped = v
		}
	}
	return hc, nil
}

// startReady is startBridge that also waits (up to timeout) until the
// sources are ready; on an error nothing is left running.
func startReady(cfg *config, c *corpus, queue int, timeout time.Duration) (*bridge, error) {
	b, err := startBridge(cfg, c, queue)
	if err != nil {
		return nil, err
	}
	if err := b.ready(timeout); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// startServing starts a ready bridge over c that serves the stream (its
// URL is returned) and no longer feeds the bench's own subscription.
func startServing(cfg *config, c *corpus) (*bridge, string, error) {
	b, err := startReady(cfg, c, 0, 5*time.Minute)
	if err != nil {
		return nil, "", err
	}
	b.sub.Close()
	return b, b.serve(sse.Options{}), nil
}

// ready waits until every source sent its first live reset (the end of its
// start-up scan).
func (b *bridge) ready(timeout time.Duration) error {
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	for len(b.sessions) < 2 {
		select {
		case r := <-b.sub.C:
			if r.Name != agentbridge.RecordReset {
				continue
			}
			var d struct {
				Source   string            `json:"source"`
				Sessions []json.RawMessage `json:"sessions"`
			}
			if err := json.Unmarshal(r.Data, &d); err != nil {
				return fmt.Errorf("decode reset: %w", err)
			}
			if _, ok := b.sessions[d.Source]; !ok {
				b.sessions[d.Source] = len(d.Sessions)
			}
		case <-b.sub.Done:
			return errors.New("the bench's own subscription was cut off")
		case <-tm.C:
			return fmt.Errorf("sources not ready after %v", timeout)
		}
	}
	return nil
}

// waitFor reads the bench subscription until a record whose data contains
// marker arrives, and returns when it arrived and how many records (and
// data bytes) came.
func (b *bridge) waitFor(marker []byte, timeout time.Duration) (time.Time, int, int, error) {
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	n, nb := 0, 0
	for {
		select {
		case r := <-b.sub.C:
			n++
			nb += len(r.Data)
			if bytes.Contains(r.Data, marker) {
				return time.Now(), n, nb, nil
			}
		case <-b.sub.Done:
			return time.Time{}, n, nb, errors.New("the bench's own subscription was cut off")
		case <-tm.C:
			return time.Time{}, n, nb, fmt.Errorf("marker not seen after %v (%d records)", timeout, n)
		}
	}
}

// serve starts the real SSE handler on a loopback server.
func (b *bridge) serve(o sse.Options) string {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	b.srv = httptest.NewUnstartedServer(sse.New(b.hub, o))
	b.srv.Config.ErrorLog = nil
	b.srv.Start()
	return b.srv.URL
}

// stop ends the sources and the server and waits for them, then the
// history's writer.
func (b *bridge) stop() {
	b.sub.Close()
	if b.srv != nil {
		b.srv.CloseClientConnections()
		b.srv.Close()
	}
	b.cancel()
	<-b.done
	b.stopHistory()
}

// sseClient is one stream client over loopback that counts events and
// reports markers it sees.
type sseClient struct {
	resp   *http.Response
	events atomic.Int64
	pings  atomic.Int64
	ready  chan struct{} // closed at the first event
	once   sync.Once
}

// dial opens the stream at url.
func dial(ctx context.Context, client *http.Client, url string) (*sseClient, error) {
	return dialFrom(ctx, client, url, 0)
}

// dialFrom opens the stream at url, resuming after revision since when it
// is not 0 (Last-Event-ID, as EventSource reconnects).
func dialFrom(ctx context.Context, client *http.Client, url string, since uint64) (*sseClient, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("stream request: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if since != 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(since, 10))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("open stream: %s", resp.Status)
	}
	return &sseClient{resp: resp, ready: make(chan struct{})}, nil
}

// loopbackClient is an HTTP client for many concurrent streams.
func loopbackClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 4096,
		MaxConnsPerHost:     0,
		DisableCompression:  true,
		ReadBufferSize:      4 << 10,
		WriteBufferSize:     4 << 10,
	}}
}

// read follows the stream until it ends, calling onEvent (when not nil)
// for every event, its Data valid during the call and nil with skipData,
// and counting heartbeats.
func (c *sseClient) read(skipData bool, onEvent func(client.Event)) {
	defer c.resp.Body.Close()
	r := client.NewReader(c.resp.Body, client.SSE, 0)
	r.Ping = func() { c.pings.Add(1) }
	r.SkipData = skipData
	for {
		ev, err := r.Next()
		if err != nil {
			return
		}
		c.events.Add(1)
		c.once.Do(func() { close(c.ready) })
		if onEvent != nil {
			onEvent(ev)
		}
	}
}
