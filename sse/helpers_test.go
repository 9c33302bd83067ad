package sse

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// wait bounds a wait for an event: a hang bound, not a timing (-race on a
// loaded machine is slow).
const wait = time.Minute

// frame is one SSE message as a conforming client parses it, plus the
// comment lines seen since the previous message.
type frame struct {
	ID, Event, Data, Retry string
	HasID                  bool
	Comments               []string
	Line                   string // the frame's first line
}

// readFrames parses an SSE body into frames; the channel closes at EOF.
func readFrames(body io.Reader) <-chan frame {
	ch := make(chan frame, 4096)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var f frame
		var data []string
		for sc.Scan() {
			line := sc.Text()
			if f.Line == "" {
				f.Line = line
			}
			if line == "" {
				if len(data) > 0 || len(f.Comments) > 0 {
					f.Data = strings.Join(data, "\n")
					ch <- f
				}
				f, data = frame{}, nil
				continue
			}
			if c, ok := strings.CutPrefix(line, ":"); ok {
				f.Comments = append(f.Comments, strings.TrimPrefix(c, " "))
				continue
			}
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "id":
				f.ID, f.HasID = value, true
			case "event":
				f.Event = value
			case "data":
				data = append(data, value)
			case "retry":
				f.Retry = value
			default:
				panic(fmt.Sprintf("unexpected SSE field %q", line))
			}
		}
	}()
	return ch
}

// stream is an open client connection.
type stream struct {
	resp   *http.Response
	frames <-chan frame
	cancel context.CancelFunc
}

func open(tb testing.TB, url string, header http.Header) *stream {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		tb.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	s := &stream{resp: resp, frames: readFrames(resp.Body), cancel: cancel}
	tb.Cleanup(s.close)
	return s
}

func (s *stream) close() { s.cancel(); s.resp.Body.Close() }

// next returns the next data frame (skipping heartbeat-only frames).
func (s *stream) next(tb testing.TB) frame {
	tb.Helper()
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				tb.Fatal("stream ended")
			}
			if f.Data == "" {
				continue
			}
			return f
		case <-time.After(wait):
			tb.Fatal("no event")
		}
	}
}

// until reads data frames until one with id rev.
func (s *stream) until(tb testing.TB, rev uint64) []frame {
	tb.Helper()
	var out []frame
	for {
		f := s.next(tb)
		out = append(out, f)
		if f.ID == fmt.Sprint(rev) {
			return out
		}
	}
}

func events(fs []frame) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Event
	}
	return out
}

// spy records the subscriptions the handler opens.
type spy struct {
	*hub.Hub
	subs chan *hub.Subscription
}

func (s *spy) Subscribe(since uint64, hasSince bool, f agentbridge.Filter) *hub.Subscription {
	sub := s.Hub.Subscribe(since, hasSince, f)
	select {
	case s.subs <- sub:
	default:
	}
	return sub
}

// fixture is a hub with two push sources behind a test server.
type fixture struct {
	hub *hub.Hub
	spy *spy
	srv *httptest.Server
	h   *Handler
}

func newFixture(tb testing.TB, ho hub.Options, so Options) *fixture {
	tb.Helper()
	h := hub.New(ho)
	for _, id := range []string{"p", "q"} {
		err := h.AddPush(agentbridge.SourceInfo{ID: id, DisplayName: id, Harnesses: []agentbridge.Harness{{ID: "a", DisplayName: "A"}}})
		if err != nil {
			tb.Fatal(err)
		}
	}
	sp := &spy{Hub: h, subs: make(chan *hub.Subscription, 64)}
	hd := New(sp, so)
	srv := httptest.NewServer(hd)
	tb.Cleanup(srv.Close)
	return &fixture{hub: h, spy: sp, srv: srv, h: hd}
}

func (fx *fixture) upsert(tb testing.TB, source, id string, st agentbridge.Status) uint64 {
	tb.Helper()
	if err := fx.hub.Publish(source, []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: agentbridge.Snapshot{ID: id, Harness: "a", Status: st}}}); err != nil {
		tb.Fatal(err)
	}
	return fx.hub.Revision()
}

// applied is the state a reset/upsert/remove client builds.
type applied map[string]map[string]agentbridge.Snapshot

func (a applied) apply(tb testing.TB, f frame) {
	tb.Helper()
	var d struct {
		Source    string                 `json:"source"`
		Sessions  []agentbridge.Snapshot `json:"sessions"`
		Snapshot  agentbridge.Snapshot   `json:"snapshot"`
		SessionID string                 `json:"sessionId"`
	}
	if err := json.Unmarshal([]byte(f.Data), &d); err != nil {
		tb.Fatalf("event %s: %v", f.Event, err)
	}
	switch f.Event {
	case "reset":
		a[d.Source] = map[string]agentbridge.Snapshot{}
		for _, s := range d.Sessions {
			a[d.Source][s.ID] = s
		}
	case "upsert":
		if a[d.Source] == nil {
			a[d.Source] = map[string]agentbridge.Snapshot{}
		}
		a[d.Source][d.Snapshot.ID] = d.Snapshot
	case "remove":
		delete(a[d.Source], d.SessionID)
	}
}

func (a applied) entries() []agentbridge.Entry {
	out := []agentbridge.Entry{}
	for _, src := range []string{"p", "q"} {
		for _, id := range sortedKeys(a[src]) {
			out = append(out, agentbridge.Entry{Source: src, Snapshot: a[src][id]})
		}
	}
	return out
}

func sortedKeys(m map[string]agentbridge.Snapshot) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}
