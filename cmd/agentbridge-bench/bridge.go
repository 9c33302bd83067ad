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
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources/claudecode"
	"github.com/agentbridge/agentbridge/sources/codex"
	"github.com/agentbridge/agentbridge/sse"
)

// bridge is the real hub with the Claude Code and Codex sources, run
// in-process over a corpus, optionally with the real SSE handler on a
// loopback server.
type bridge struct {
	hub    *hub.Hub
	sub    *hub.Subscription // opened before Run: sees the sources' resets
	cancel context.CancelFunc
	done   chan struct{}
	srv    *httptest.Server
	// sessions counts the sessions of each source's first live reset.
	sessions map[string]int
}

// startBridge builds the hub with both sources over c and runs it. queue
// is the hub's per-subscriber queue (0: the default).
func startBridge(c *corpus, queue int) (*bridge, error) {
	log := slog.New(slog.DiscardHandler)
	h := hub.New(hub.Options{Logger: log, QueueSize: queue})
	if err := h.Add(claudecode.New(claudecode.Options{Home: c.ClaudeDir, Logger: log})); err != nil {
		return nil, fmt.Errorf("add claude-code source: %w", err)
	}
	if err := h.Add(codex.New(codex.Options{Home: c.CodexHome, Logger: log})); err != nil {
		return nil, fmt.Errorf("add codex source: %w", err)
	}
	b := &bridge{hub: h, sub: h.Subscribe(0, false, agentbridge.Filter{}), done: make(chan struct{}), sessions: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() {
		defer close(b.done)
		_ = h.Run(ctx)
	}()
	return b, nil
}

// startReady is startBridge that also waits (up to timeout) until the
// sources are ready; on an error nothing is left running.
func startReady(c *corpus, queue int, timeout time.Duration) (*bridge, error) {
	b, err := startBridge(c, queue)
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
func startServing(c *corpus) (*bridge, string, error) {
	b, err := startReady(c, 0, 5*time.Minute)
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

// stop ends the sources and the server and waits for them.
func (b *bridge) stop() {
	b.sub.Close()
	if b.srv != nil {
		b.srv.CloseClientConnections()
		b.srv.Close()
	}
	b.cancel()
	<-b.done
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
