// Package sse serves the hub's record stream, GET /v1/events (docs/contract.md
// section 4): as Server-Sent Events through r3labs/sse, or as JSON lines.
//
// Wire format. Every event has `id:` = the hub revision, `event:` = the
// record name and one `data:` line of compact JSON. The response starts
// with `retry: 3000`, the first line of the first event. While idle, a
// comment line `: ping` is sent every Options.Heartbeat (15 s). With `?format=ndjson` or
// `Accept: application/x-ndjson` the same records come as lines
// `{"id":N,"event":"…","data":{…}}`, and the heartbeat is an empty line,
// which line readers should skip.
//
// Resume. The cursor is the Last-Event-ID header, else the `since` query
// parameter (EventSource cannot set headers on its first connect); a value
// that is not a decimal revision counts as no cursor. See hub.Subscribe for
// when the cursor is honoured and when the stream starts with resets, and
// for the ids of initial resets.
//
// Use of r3labs/sse: AutoReplay and AutoStream are off, every connection
// gets its own r3 stream (one slow client cannot hold up another), the
// Last-Event-ID header is removed before r3 sees it, the initial records
// are published once r3's OnSubscribe said the connection is registered,
// every write has its own deadline, and a stream is removed only after
// r3's handler has returned.
//
// One queue per client. The connection's r3 stream buffer (BufferSize
// records) is the only queue between the hub and the wire: once the
// initial records are in it, the hub hands every live record straight to
// it (hub.Subscription.Attach, a non-blocking TryPublish), and a client
// whose buffer is full is cut off. No goroutine of ours runs per
// connection besides r3's handler and its stream: the heartbeat is a
// one-shot timer, re-armed for the time left when records went out
// meanwhile.
package sse

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	r3 "github.com/r3labs/sse/v2"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/defaults"
)

// Defaults of Options.
const (
	DefaultHeartbeat    = 15 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	DefaultRetry        = 3 * time.Second
	DefaultBufferSize   = 4096 // 32 KiB of pointers per connection: a 1 MiB journal write is ~350 records
)

// Hub is what the stream needs of the hub.
type Hub interface {
	Subscribe(since uint64, hasSince bool, f agentbridge.Filter) *hub.Subscription
}

// Options configure a Handler. The zero value is usable.
type Options struct {
	Logger       *slog.Logger  // nil: slog.Default()
	Heartbeat    time.Duration // idle comment interval; 0: DefaultHeartbeat
	WriteTimeout time.Duration // deadline of each write to a client; 0: DefaultWriteTimeout
	Retry        time.Duration // reconnect delay sent with the first event; 0: DefaultRetry
	BufferSize   int           // events queued in a connection's r3 stream; 0: DefaultBufferSize
}

// Handler serves the stream. It is an http.Handler for the unfiltered
// stream; Serve takes a filter.
type Handler struct {
	hub   Hub
	o     Options
	log   *slog.Logger
	srv   *r3.Server
	next  atomic.Uint64
	conns sync.Map // r3 stream id → *conn
	retry []byte   // the line that starts every SSE response
}

// conn is one SSE connection's rendezvous with r3's OnSubscribe.
type conn struct {
	ready chan struct{}
	once  sync.Once
}

// New returns a Handler that streams from h.
func New(h Hub, o Options) *Handler {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	defaults.Positive(&o.Heartbeat, DefaultHeartbeat)
	defaults.Positive(&o.WriteTimeout, DefaultWriteTimeout)
	defaults.Positive(&o.Retry, DefaultRetry)
	defaults.Positive(&o.BufferSize, DefaultBufferSize)
	s := &Handler{hub: h, o: o, log: o.Logger, retry: []byte("retry: " + strconv.FormatInt(o.Retry.Milliseconds(), 10) + "\n")}
	s.srv = r3.NewWithCallback(s.subscribed, nil)
	s.srv.AutoReplay = false
	s.srv.AutoStream = false
	s.srv.BufferSize = o.BufferSize
	s.srv.Headers = map[string]string{
		"Cache-Control":     "no-store",
		"X-Accel-Buffering": "no",
	}
	return s
}

func (s *Handler) subscribed(id string, _ *r3.Subscriber) {
	if c, ok := s.conns.Load(id); ok {
		c := c.(*conn)
		c.once.Do(func() { close(c.ready) })
	}
}

// Cursor returns the resume cursor of a stream request: the Last-Event-ID
// header, else the `since` query parameter. ok is false when there is none
// or it is not a decimal revision (such a request starts with resets).
func Cursor(r *http.Request) (since uint64, ok bool) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("since")
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// WantsNDJSON reports whether a stream request asks for JSON lines:
// `?format=ndjson` or an Accept header naming application/x-ndjson.
func WantsNDJSON(r *http.Request) bool {
	if r.URL.Query().Get("format") == "ndjson" {
		return true
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "application/x-ndjson" {
			return true
		}
	}
	return false
}

// ServeHTTP serves the unfiltered stream.
func (s *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.Serve(w, r, agentbridge.Filter{})
}

// Serve serves the stream of the sessions f selects, resuming from the
// request's cursor (see Cursor), as SSE or JSON lines (see WantsNDJSON). It
// returns when the client goes away, when the client is cut off for not
// keeping up (it then reconnects and resumes), or when the request's context
// ends — the server's base context included, so cancelling it ends every
// open stream.
func (s *Handler) Serve(w http.ResponseWriter, r *http.Request, f agentbridge.Filter) {
	since, ok := Cursor(r)
	sub := s.hub.Subscribe(since, ok, f)
	defer sub.Close()
	if WantsNDJSON(r) {
		s.serveLines(w, r, sub)
		return
	}
	s.serveSSE(w, r, sub)
}

func (s *Handler) serveSSE(w http.ResponseWriter, r *http.Request, sub *hub.Subscription) {
	id := strconv.FormatUint(s.next.Add(1), 10)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	c := &conn{ready: make(chan struct{})}
	s.conns.Store(id, c)
	defer s.conns.Delete(id)
	s.srv.CreateStream(id)

	dw := newDeadlineWriter(w, s.o.WriteTimeout, cancel)
	dw.queued = new(atomic.Int64)
	defer dw.abortOn(ctx)()
	// The stream starts with the retry field, as part of the first event
	// (r3 would write it after the event's other fields).
	dw.prefix = s.retry
	r3req := r.Clone(ctx)
	r3req.URL.RawQuery = "stream=" + id
	r3req.Header.Del("Last-Event-ID") // ours, parsed above; r3 would 400 on a non-number

	var last atomic.Int64 // when a record or ping last went out, unix ns
	var hb *time.Timer    // set by start
	var wg sync.WaitGroup
	wg.Go(func() { hb = s.start(ctx, cancel, id, c, sub, dw, &last) })
	s.srv.ServeHTTP(dw, r3req)
	cancel()
	wg.Wait()
	if hb != nil {
		hb.Stop() // a callback running now sees ctx ended
	}
	// Only now: removing a stream while r3's handler runs leaks its
	// goroutine (notes/hub.md §1.5).
	s.srv.RemoveStream(id)
}

func event(rec hub.Record) *r3.Event {
	return &r3.Event{ID: strconv.AppendUint(nil, rec.Rev, 10), Event: []byte(rec.Name), Data: rec.Data}
}

// start waits for r3 to register the connection, publishes the initial
// records into its stream, then attaches the stream to the subscription
// and arms the heartbeat. It returns at once when ctx ends.
func (s *Handler) start(ctx context.Context, cancel context.CancelFunc, id string, c *conn, sub *hub.Subscription, dw *deadlineWriter, last *atomic.Int64) *time.Timer {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil
	}
	// The initial batch may be longer than any buffer: publish it blocking.
	// A stuck client still cannot hold this forever: its writes time out
	// and r3 drains the stream.
	for _, rec := range sub.Initial {
		if ctx.Err() != nil {
			return nil
		}
		dw.queued.Add(1)
		s.srv.Publish(id, event(rec))
	}
	last.Store(time.Now().UnixNano())
	attached := sub.Attach(func(rec hub.Record) bool {
		dw.queued.Add(1)
		if !s.srv.TryPublish(id, event(rec)) {
			dw.queued.Add(-1)
			s.log.Info("stream client cut off: it did not keep up")
			cancel()
			return false
		}
		last.Store(time.Now().UnixNano())
		return true
	})
	if !attached {
		s.log.Info("stream client cut off: it did not keep up")
		cancel()
		return nil
	}
	period := s.o.Heartbeat
	var tm *time.Timer
	tm = time.AfterFunc(time.Duration(math.MaxInt64), func() {
		if ctx.Err() != nil {
			return
		}
		if since := time.Duration(time.Now().UnixNano() - last.Load()); since < period {
			tm.Reset(period - since) // records went out meanwhile
			return
		}
		dw.idle.Store(true) // the ping's flush disarms the write deadline
		dw.queued.Add(1)
		if !s.srv.TryPublish(id, &r3.Event{Comment: []byte("ping")}) {
			dw.queued.Add(-1)
			cancel()
			return
		}
		last.Store(time.Now().UnixNano())
		tm.Reset(period)
	})
	tm.Reset(period) // only now: the callback reads tm
	return tm
}

// serveLines writes the JSON-lines form directly, with the same semantics.
func (s *Handler) serveLines(w http.ResponseWriter, r *http.Request, sub *hub.Subscription) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	dw := newDeadlineWriter(w, s.o.WriteTimeout, cancel)
	defer dw.abortOn(ctx)()
	dw.WriteHeader(http.StatusOK)
	if dw.Flush(); dw.failed.Load() {
		return
	}
	var buf bytes.Buffer
	line := func(rec hub.Record) {
		buf.WriteString(`{"id":`)
		buf.WriteString(strconv.FormatUint(rec.Rev, 10))
		buf.WriteString(`,"event":"`)
		buf.WriteString(rec.Name) // a fixed set of plain names
		buf.WriteString(`","data":`)
		buf.Write(rec.Data)
		buf.WriteString("}\n")
	}
	write := func() bool {
		_, err := dw.Write(buf.Bytes())
		buf.Reset()
		if err == nil {
			dw.Flush()
		}
		return err == nil && !dw.failed.Load()
	}
	for i, rec := range sub.Initial {
		line(rec)
		if (buf.Len() >= 32<<10 || i == len(sub.Initial)-1) && !write() {
			return
		}
	}
	hb := time.NewTimer(s.o.Heartbeat)
	defer hb.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Done:
			s.log.Info("stream client cut off: it did not keep up")
			return
		case rec := <-sub.C:
			line(rec)
		drain: // batch what is already queued into one write
			for buf.Len() < 32<<10 {
				select {
				case rec := <-sub.C:
					line(rec)
				default:
					break drain
				}
			}
			if !write() {
				return
			}
			hb.Reset(s.o.Heartbeat)
		case <-hb.C:
			buf.WriteByte('\n')
			dw.idle.Store(true) // the heartbeat's flush disarms the write deadline
			if !write() {
				return
			}
			hb.Reset(s.o.Heartbeat)
		}
	}
}

var errWriteFailed = errors.New("sse: an earlier write to the client failed")

// deadlineWriter gives every write to the client its own deadline, so that
// a peer that stops reading fails the write instead of blocking r3's
// handler (and, through it, r3's stream) for good. After a failure every
// write fails at once and onFail (cancelling the connection) has run.
// It keeps Flush and Unwrap.
type deadlineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	onFail  func()
	failed  atomic.Bool
	aborted atomic.Bool
	idle    atomic.Bool // set before a heartbeat: the next Flush disarms the deadline
	set     time.Time   // when the deadline was last moved; only the writing goroutine uses it
	prefix  []byte      // written before the first body byte; only the writing goroutine uses it
	// queued, when set, counts the events handed to r3 and not yet
	// written: r3 flushes after every event, and a flush while more events
	// wait is skipped, so that a burst goes out in a few large writes
	// instead of one write per event. The flush of the last waiting event
	// is never skipped.
	queued  *atomic.Int64
	started bool // r3's first flush (the response header) was made
}

// extend moves the write deadline to now+timeout. It skips the call while
// the current deadline is still at least three quarters of the timeout
// away, which saves a timer update on every one of r3's small writes.
func (d *deadlineWriter) extend() {
	now := time.Now()
	if d.aborted.Load() || now.Sub(d.set) < d.timeout/4 {
		return
	}
	d.set = now
	_ = d.rc.SetWriteDeadline(now.Add(d.timeout)) // unsupported: no deadline
	if d.aborted.Load() {                         // abort raced with the line above: keep it
		_ = d.rc.SetWriteDeadline(time.Now())
	}
}

// abortOn makes every write to the client fail at once when ctx ends, a
// write already blocked on a peer that stopped reading included: the
// connection's end (the server shutting down, the client cut off) must not
// wait for a write timeout. It returns a function that stops watching ctx.
func (d *deadlineWriter) abortOn(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		d.aborted.Store(true)
		_ = d.rc.SetWriteDeadline(time.Now())
	})
}

func newDeadlineWriter(w http.ResponseWriter, timeout time.Duration, onFail func()) *deadlineWriter {
	return &deadlineWriter{w: w, rc: http.NewResponseController(w), timeout: timeout, onFail: onFail}
}

func (d *deadlineWriter) Header() http.Header { return d.w.Header() }

func (d *deadlineWriter) WriteHeader(code int) { d.w.WriteHeader(code) }

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if d.failed.Load() || d.aborted.Load() {
		return 0, errWriteFailed
	}
	d.extend()
	if pre := d.prefix; pre != nil {
		d.prefix = nil
		n, err := d.w.Write(append(pre[:len(pre):len(pre)], p...))
		if err != nil {
			d.fail()
		}
		return max(0, n-len(pre)), err
	}
	n, err := d.w.Write(p)
	if err != nil {
		d.fail()
	}
	return n, err
}

func (d *deadlineWriter) Flush() {
	if d.failed.Load() || d.aborted.Load() {
		return
	}
	if d.queued != nil {
		if d.started && d.queued.Add(-1) > 0 {
			return // more events are waiting: they flush this one too
		}
		d.started = true
	}
	d.extend()
	if err := d.rc.Flush(); err != nil {
		d.fail()
		return
	}
	if d.idle.CompareAndSwap(true, false) {
		d.disarm()
	}
}

// disarm clears the write deadline after a heartbeat: nothing may be
// written for a whole heartbeat period, and a deadline left armed would
// wake the idle process for nothing when it expires. The next write arms
// it again.
func (d *deadlineWriter) disarm() {
	d.set = time.Time{}
	_ = d.rc.SetWriteDeadline(time.Time{})
	if d.aborted.Load() { // abort raced with the line above: keep it
		_ = d.rc.SetWriteDeadline(time.Now())
	}
}

func (d *deadlineWriter) fail() {
	if d.failed.CompareAndSwap(false, true) {
		d.onFail()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.w }

var (
	_ Hub          = (*hub.Hub)(nil)
	_ http.Handler = (*Handler)(nil)
	_ http.Flusher = (*deadlineWriter)(nil)
)
