package sse

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

func TestStreamStartsWithRetryAndResets(t *testing.T) {
	fx := newFixture(t, hub.Options{}, Options{})
	fx.upsert(t, "p", "s1", agentbridge.StatusRunning)
	before := fx.hub.Revision()

	s := open(t, fx.srv.URL, nil)
	for k, want := range map[string]string{
		"Content-Type":      "text/event-stream",
		"Cache-Control":     "no-store",
		"X-Accel-Buffering": "no",
	} {
		if got := s.resp.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	first, second := s.next(t), s.next(t)
	if first.Retry != "3000" || second.Retry != "" {
		t.Errorf("retry = %q then %q, want 3000 on the first event only", first.Retry, second.Retry)
	}
	if first.Line != "retry: 3000" {
		t.Errorf("the stream starts with %q, want the retry field first", first.Line)
	}
	want := []frame{
		{Event: "reset", Data: `{"source":"p","sessions":[{"id":"s1","harness":"a","status":"running"}]}`},
		{Event: "reset", Data: `{"source":"q","sessions":[]}`},
	}
	got := []frame{first, second}
	if diff := cmp.Diff(want, got, cmpFrame); diff != "" {
		t.Errorf("initial events mismatch (-want +got):\n%s", diff)
	}
	id1, _ := strconv.ParseUint(first.ID, 10, 64)
	id2, _ := strconv.ParseUint(second.ID, 10, 64)
	if id1 <= before || id2 <= id1 {
		t.Errorf("initial ids %q, %q: want growing ids above %d", first.ID, second.ID, before)
	}

	rev := fx.upsert(t, "q", "s2", agentbridge.StatusIdle)
	live := s.next(t)
	if live.ID != fmt.Sprint(rev) || live.Event != "upsert" || live.Data != `{"source":"q","snapshot":{"id":"s2","harness":"a","status":"idle"}}` {
		t.Errorf("live event = %+v, want upsert with id %d", live, rev)
	}
	if rev <= id2 {
		t.Errorf("live id %d not above the initial ids", rev)
	}
}

var cmpFrame = cmp.Comparer(func(a, b frame) bool {
	return a.Event == b.Event && a.Data == b.Data
})

func TestResumeReplaysExactly(t *testing.T) {
	tests := []struct {
		name   string
		cursor func(url string, last string) (string, http.Header)
	}{
		{"Last-Event-ID", func(url, last string) (string, http.Header) {
			return url, http.Header{"Last-Event-Id": {last}}
		}},
		{"since", func(url, last string) (string, http.Header) { return url + "?since=" + last, nil }},
		{"header wins over since", func(url, last string) (string, http.Header) {
			return url + "?since=1", http.Header{"Last-Event-Id": {last}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, hub.Options{}, Options{})
			s := open(t, fx.srv.URL, nil)
			s.next(t)
			s.next(t)
			rev := fx.upsert(t, "p", "s1", agentbridge.StatusBlocked)
			last := s.until(t, rev)[0]
			s.close()

			var missed []uint64
			for _, st := range agentbridge.Statuses {
				missed = append(missed, fx.upsert(t, "p", "s1", st))
			}
			url, hdr := tt.cursor(fx.srv.URL, last.ID)
			r := open(t, url, hdr)
			got := r.until(t, missed[len(missed)-1])
			var ids []string
			for _, f := range got {
				ids = append(ids, f.ID)
			}
			var want []string
			for _, m := range missed {
				want = append(want, fmt.Sprint(m))
			}
			if diff := cmp.Diff(want, ids); diff != "" {
				t.Errorf("replayed ids mismatch (-want +got):\n%s", diff)
			}
			if got[0].Retry != "3000" {
				t.Errorf("first replayed event has retry %q", got[0].Retry)
			}
		})
	}
}

func TestUnresumableCursorGetsResets(t *testing.T) {
	tests := []struct {
		name   string
		header string
		query  string
	}{
		{"too old", "", "since=OLD"},
		{"earlier run", "1", ""},
		{"future", "", "since=FUTURE"},
		{"not a number", "abc", ""},
		{"negative", "", "since=-5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, hub.Options{RingSize: 4}, Options{})
			old := fx.hub.Revision()
			for i := range 10 {
				fx.upsert(t, "p", fmt.Sprint("s", i), agentbridge.StatusIdle)
			}
			q := strings.NewReplacer("OLD", fmt.Sprint(old+1), "FUTURE", fmt.Sprint(fx.hub.Revision()+100)).Replace(tt.query)
			var hdr http.Header
			if tt.header != "" {
				hdr = http.Header{"Last-Event-Id": {tt.header}}
			}
			s := open(t, fx.srv.URL+"?"+q, hdr)
			got := []frame{s.next(t), s.next(t)}
			if diff := cmp.Diff([]string{"reset", "reset"}, events(got)); diff != "" {
				t.Fatalf("events mismatch (-want +got):\n%s", diff)
			}
			c := applied{}
			for _, f := range got {
				c.apply(t, f)
			}
			_, list := fx.hub.Sessions(agentbridge.Filter{})
			if diff := cmp.Diff(list, c.entries()); diff != "" {
				t.Errorf("state after resets differs from Sessions (-sessions +client):\n%s", diff)
			}
		})
	}
}

// TestDropDuringInitialResets: a client that saw only the first of its
// initial resets resumes with that id and must get every reset again.
func TestDropDuringInitialResets(t *testing.T) {
	fx := newFixture(t, hub.Options{}, Options{})
	fx.upsert(t, "q", "s1", agentbridge.StatusIdle)
	s := open(t, fx.srv.URL, nil)
	first := s.next(t)
	s.close()
	r := open(t, fx.srv.URL, http.Header{"Last-Event-Id": {first.ID}})
	got := []frame{r.next(t), r.next(t)}
	if diff := cmp.Diff([]string{"reset", "reset"}, events(got)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestHeartbeat(t *testing.T) {
	fx := newFixture(t, hub.Options{}, Options{Heartbeat: 20 * time.Millisecond})
	s := open(t, fx.srv.URL, nil)
	deadline := time.After(wait)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				t.Fatal("stream ended")
			}
			if len(f.Comments) > 0 {
				if f.Comments[0] != "ping" || f.Data != "" {
					t.Errorf("heartbeat frame = %+v, want the comment ping alone", f)
				}
				return
			}
		case <-deadline:
			t.Fatal("no heartbeat")
		}
	}
}

func TestNDJSON(t *testing.T) {
	for _, tt := range []struct {
		name   string
		query  string
		accept string
	}{
		{"query", "?format=ndjson", ""},
		{"accept", "", "application/x-ndjson"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, hub.Options{}, Options{Heartbeat: 20 * time.Millisecond})
			fx.upsert(t, "p", "s1", agentbridge.StatusIdle)
			req, _ := http.NewRequest(http.MethodGet, fx.srv.URL+tt.query, nil)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
				t.Errorf("Content-Type = %q", ct)
			}
			lines := make(chan string, 100)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			read := func() string {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatal("stream ended")
					}
					return l
				case <-time.After(wait):
					t.Fatal("no line")
				}
				return ""
			}
			type line struct {
				ID    uint64          `json:"id"`
				Event string          `json:"event"`
				Data  json.RawMessage `json:"data"`
			}
			var got []line
			sawHeartbeat := false
			rev := fx.upsert(t, "q", "s2", agentbridge.StatusRunning)
			for len(got) < 3 || !sawHeartbeat {
				l := read()
				if l == "" {
					sawHeartbeat = true
					continue
				}
				var v line
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				got = append(got, v)
			}
			if got[0].Event != "reset" || got[1].Event != "reset" || got[2].Event != "upsert" || got[2].ID != rev {
				t.Errorf("lines = %+v", got)
			}
			if string(got[2].Data) != `{"source":"q","snapshot":{"id":"s2","harness":"a","status":"running"}}` {
				t.Errorf("data = %s", got[2].Data)
			}
		})
	}
}

func TestFilteredServe(t *testing.T) {
	h := hub.New(hub.Options{})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "p", Harnesses: []agentbridge.Harness{{ID: "a"}}}); err != nil {
		t.Fatal(err)
	}
	hd := New(h, Options{})
	f := agentbridge.Filter{Statuses: []agentbridge.Status{agentbridge.StatusRunning}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hd.Serve(w, r, f) }))
	t.Cleanup(srv.Close) // after the stream's own cleanup closes it
	pub := func(st agentbridge.Status) {
		t.Helper()
		if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: agentbridge.Snapshot{ID: "s1", Harness: "a", Status: st}}}); err != nil {
			t.Fatal(err)
		}
	}
	pub(agentbridge.StatusRunning)
	s := open(t, srv.URL, nil)
	c := applied{}
	c.apply(t, s.next(t))
	pub(agentbridge.StatusIdle)
	rm := s.next(t)
	if rm.Event != "remove" || rm.ID != fmt.Sprint(h.Revision()) {
		t.Errorf("event = %+v, want a remove with id %d", rm, h.Revision())
	}
	c.apply(t, rm)
	if _, list := h.Sessions(f); len(list) != 0 || len(c.entries()) != 0 {
		t.Errorf("filtered client holds %v, Sessions %v", c.entries(), list)
	}
}

// TestSlowClientCutOff: a client that stops reading is cut off, while
// another client receives every event and the publisher never waits.
func TestSlowClientCutOff(t *testing.T) {
	fx := newFixture(t, hub.Options{QueueSize: 16}, Options{BufferSize: 4, WriteTimeout: 200 * time.Millisecond})

	// The slow client: a raw connection with a tiny receive buffer that
	// sends its request and never reads.
	d := net.Dialer{Control: smallReceiveBuffer}
	conn, err := d.Dial("tcp", fx.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	slow := <-fx.spy.subs

	fast := open(t, fx.srv.URL, nil)
	fast.next(t)
	fast.next(t)

	big := agentbridge.Snapshot{ID: "s1", Harness: "a", Status: agentbridge.StatusRunning, Title: strings.Repeat("t", 200)}
	for i := range 64 {
		big.Subagents = append(big.Subagents, agentbridge.Subagent{ID: fmt.Sprint("sub", i), Type: "explore", Title: strings.Repeat("x", 200), Status: agentbridge.SubagentRunning})
	}
	// The publisher waits for the fast client after every event (so it
	// never falls behind) and stops once the slow one is cut off; it
	// finishing at all proves that the slow client never blocked it.
	done := make(chan error, 1)
	go func() {
		for i := range 5000 {
			big.Title = fmt.Sprint(i, strings.Repeat("t", 190))
			if err := fx.hub.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: big}}); err != nil {
				done <- err
				return
			}
			rev := fx.hub.Revision()
			for {
				select {
				case f, ok := <-fast.frames:
					if !ok {
						done <- errors.New("the fast client's stream ended")
						return
					}
					if f.ID != fmt.Sprint(rev) {
						continue
					}
				case <-time.After(wait):
					done <- errors.New("the fast client got nothing")
					return
				}
				break
			}
			select {
			case <-slow.Done:
				done <- nil
				return
			default:
			}
		}
		done <- errors.New("the slow client was never cut off")
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * wait):
		t.Fatal("the publisher did not finish")
	}
	// The server ends the slow client's response: reading it reaches the
	// end (the chunked terminator, or the connection closing when a write
	// failed), never the read deadline.
	conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("slow client's response did not end: %v", err)
	}
}

func TestBaseContextEndsStreams(t *testing.T) {
	h := hub.New(hub.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := httptest.NewUnstartedServer(New(h, Options{}))
	srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	srv.Start()
	defer srv.Close()
	var ended []chan struct{}
	for _, q := range []string{"", "?format=ndjson"} {
		resp, err := http.Get(srv.URL + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		done := make(chan struct{})
		go func() { io.Copy(io.Discard, resp.Body); close(done) }()
		ended = append(ended, done)
	}
	cancel()
	for i, done := range ended {
		select {
		case <-done:
		case <-time.After(wait):
			t.Fatalf("stream %d did not end with the server's base context", i)
		}
	}
}

// TestEndedStreamsDoNotWaitForBlockedWrites: when the server's base
// context ends (shutdown), a stream whose client stopped reading, so that
// the server is blocked writing to it, ends at once rather than after the
// write timeout, in both formats. The connection is a net.Pipe: a write
// to it returns only once the peer reads it, and the client never reads
// before the shutdown, so the server's first write blocks for certain;
// the write timeout is an hour, so only the shutdown can end that write.
func TestEndedStreamsDoNotWaitForBlockedWrites(t *testing.T) {
	for _, q := range []string{"/", "/?format=ndjson"} {
		t.Run(q, func(t *testing.T) {
			h := hub.New(hub.Options{})
			if err := h.AddPush(agentbridge.SourceInfo{ID: "p", Harnesses: []agentbridge.Harness{{ID: "a"}}}); err != nil {
				t.Fatal(err)
			}
			if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpReset, Sessions: []agentbridge.Snapshot{
				{ID: "s1", Harness: "a", Status: agentbridge.StatusIdle}}}}); err != nil {
				t.Fatal(err)
			}
			sp := &spy{Hub: h, subs: make(chan *hub.Subscription, 1)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client, server := net.Pipe()
			defer client.Close()
			watched := &writeWatch{Conn: server, writing: make(chan struct{})}
			ln := &oneConnListener{conn: watched, closed: make(chan struct{})}
			handler := New(sp, Options{WriteTimeout: time.Hour})
			returned := make(chan struct{})
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(returned)
				handler.ServeHTTP(w, r)
			}), BaseContext: func(net.Listener) context.Context { return ctx }}
			served := make(chan struct{})
			go func() { srv.Serve(ln); close(served) }()
			defer func() { srv.Close(); <-served }()

			fmt.Fprintf(client, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", q)
			select {
			case <-sp.subs:
			case <-time.After(wait):
				t.Fatal("no subscription")
			}
			select {
			case <-watched.writing: // blocked: nobody reads the pipe
			case <-time.After(wait):
				t.Fatal("the server never wrote")
			}
			cancel()
			// The stream's handler returns, while the client still reads
			// nothing, only if the blocked write was cut short. A write
			// left to its timeout would hold the stream for an hour. (The
			// client must not read until then: a read would let the write
			// through.)
			select {
			case <-returned:
			case <-time.After(time.Minute):
				t.Fatal("the stream did not end after the base context while its write was blocked")
			}
		})
	}
}

// writeWatch closes writing when the server first writes to the client.
type writeWatch struct {
	net.Conn
	once    sync.Once
	writing chan struct{}
}

func (w *writeWatch) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.writing) })
	return w.Conn.Write(p)
}

// oneConnListener hands out one connection, then waits to be closed.
type oneConnListener struct {
	conn   net.Conn
	once   sync.Once
	given  bool
	closed chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if !l.given {
		l.given = true
		return l.conn, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

func TestCursor(t *testing.T) {
	tests := []struct {
		name   string
		header string
		query  string
		since  uint64
		ok     bool
	}{
		{"none", "", "", 0, false},
		{"header", "42", "", 42, true},
		{"query", "", "since=7", 7, true},
		{"header wins", "42", "since=7", 42, true},
		{"not a number", "4x2", "", 0, false},
		{"bad header, no fallback", "x", "since=7", 0, false},
		{"negative", "", "since=-1", 0, false},
		{"overflow", "", "since=99999999999999999999999", 0, false},
		{"spaces", " 5 ", "", 5, true},
		{"max", "18446744073709551615", "", 1<<64 - 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/v1/events?"+tt.query, nil)
			if tt.header != "" {
				r.Header.Set("Last-Event-ID", tt.header)
			}
			since, ok := Cursor(r)
			if since != tt.since || ok != tt.ok {
				t.Errorf("Cursor(header %q, query %q) = %d, %v; want %d, %v", tt.header, tt.query, since, ok, tt.since, tt.ok)
			}
		})
	}
}

func FuzzCursor(f *testing.F) {
	f.Fuzz(func(t *testing.T, header, since string) {
		r := httptest.NewRequest(http.MethodGet, "/v1/events", nil)
		r.URL.RawQuery = "since=" + since
		if header != "" && !strings.ContainsAny(header, "\r\n\x00") {
			r.Header.Set("Last-Event-ID", header)
		}
		n, ok := Cursor(r)
		if !ok && n != 0 {
			t.Fatalf("Cursor = %d, false", n)
		}
		if ok {
			v := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
			if v == "" {
				v = strings.TrimSpace(r.URL.Query().Get("since"))
			}
			if want, err := strconv.ParseUint(v, 10, 64); err != nil || want != n {
				t.Fatalf("Cursor = %d from %q", n, v)
			}
		}
	})
}

func TestWantsNDJSON(t *testing.T) {
	tests := []struct {
		query, accept string
		want          bool
	}{
		{"", "", false},
		{"format=ndjson", "", true},
		{"format=sse", "", false},
		{"", "text/event-stream", false},
		{"", "application/json, application/x-ndjson;q=0.9", true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/v1/events?"+tt.query, nil)
		if tt.accept != "" {
			r.Header.Set("Accept", tt.accept)
		}
		if got := WantsNDJSON(r); got != tt.want {
			t.Errorf("WantsNDJSON(%q, Accept %q) = %v, want %v", tt.query, tt.accept, got, tt.want)
		}
	}
}

// TestNoGoroutineLeak: streams that end (the client leaves, or the server's
// base context ends) leave no goroutine behind — r3's handler watcher
// included, which leaks when a stream is removed too early.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		h := hub.New(hub.Options{})
		if err := h.AddPush(agentbridge.SourceInfo{ID: "p", Harnesses: []agentbridge.Harness{{ID: "a"}}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		srv := httptest.NewUnstartedServer(New(h, Options{}))
		srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
		srv.Start()
		defer srv.Close()
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		for i := range 20 {
			q := []string{"", "?format=ndjson"}[i%2]
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL + q)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			if i < 10 {
				resp.Body.Close() // the client leaves
			} else {
				defer resp.Body.Close()
			}
		}
		cancel() // the rest end with the server
	}()
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
