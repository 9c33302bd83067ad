package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// StreamOptions say which stream to open.
type StreamOptions struct {
	// Query holds the session filters of GET /v1/events (source, harness,
	// status, project, ancestorPid); format and since are set from the
	// fields below.
	Query url.Values
	// Format is the wire form asked for.
	Format Format
	// Since resumes after this event id: the bridge replays what followed
	// it, or starts again with resets when it no longer holds it. 0 starts
	// with resets.
	Since uint64
	// MaxLine bounds one line (0: MaxLine).
	MaxLine int
}

// Stream is one connection to GET /v1/events.
type Stream struct {
	*Reader
	body io.ReadCloser
}

// Close ends the connection.
func (s *Stream) Close() error { return s.body.Close() }

// Open connects to the stream. The bridge is asked to resume with
// ?since (it takes Last-Event-ID alike; one of the two is enough).
func (c *Client) Open(ctx context.Context, o StreamOptions) (*Stream, error) {
	q := url.Values{}
	for k, v := range o.Query {
		q[k] = v
	}
	accept := "text/event-stream"
	if o.Format == NDJSON {
		q.Set("format", "ndjson")
		accept = "application/x-ndjson"
	}
	if o.Since > 0 {
		q.Set("since", strconv.FormatUint(o.Since, 10))
	}
	resp, err := c.Do(ctx, http.MethodGet, "/v1/events", q, nil, accept)
	if err != nil {
		return nil, err
	}
	f := SSE
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "text/event-stream":
	case "application/x-ndjson", "application/jsonl", "application/json":
		f = NDJSON
	default:
		resp.Body.Close()
		return nil, fmt.Errorf("agentbridge at %s: unexpected stream type %q", c.Addr, mt)
	}
	return &Stream{Reader: NewReader(resp.Body, f, o.MaxLine), body: resp.Body}, nil
}

// Backoff is the reconnect delay: it starts at Min, doubles after each
// failed attempt up to Max, and starts again at Min after a connection
// that delivered events (see ResetsBackoff).
type Backoff struct{ Min, Max time.Duration }

// ResetsBackoff reports whether a connection that ended with err starts
// the backoff again at Min: when it delivered events and did not end on a
// stream that breaks its rules (a line too long, a bad event), so that a
// bridge that sends a valid record then garbage is retried ever more
// slowly, not at Min after each.
func ResetsBackoff(delivered bool, err error) bool {
	return delivered && !errors.Is(err, ErrLineTooLong) && !errors.Is(err, ErrBadEvent)
}

// DefaultBackoff is what Follow uses when FollowOptions.Backoff is zero.
var DefaultBackoff = Backoff{Min: 250 * time.Millisecond, Max: 10 * time.Second}

// FollowOptions say what to follow and how to report it.
type FollowOptions struct {
	StreamOptions
	Backoff Backoff
	// OnConnect, when set, is called each time the bridge answers with a
	// stream, before its first event; resumed is false for the first
	// connection.
	OnConnect func(resumed bool)
	// OnDrop, when set, is called each time a connection is lost or an
	// attempt to connect fails, with the reason, before Follow waits to try
	// again.
	OnDrop func(err error)
	// OnDuplicate, when set, is called for an event Follow does not
	// deliver because its id is not above the last one delivered: the
	// bridge promises that this never happens, and a test can hold it to
	// that.
	OnDuplicate func(Event)
}

// Follow delivers the stream to fn, one event at a time and in order
// (the event's Data is valid until fn returns: bytes.Clone it to keep it),
// across drops: after a lost connection (or a restart of the bridge) it
// waits (Backoff) and resumes after the last event delivered, so that fn
// sees no event twice; what the bridge can no longer replay comes as
// resets. It ends when ctx does (returning ctx.Err()), when fn returns an
// error (returned as it is), when the first attempt to connect fails, or
// when the bridge gives an answer that asking again cannot fix (a 4xx
// *StatusError).
func (c *Client) Follow(ctx context.Context, o FollowOptions, fn func(Event) error) error {
	bo := o.Backoff
	if bo.Min <= 0 {
		bo = DefaultBackoff
	}
	delay, connected := bo.Min, false
	last := o.Since
	for {
		got, err := c.followOnce(ctx, o, &last, &connected, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fe fnError
		if errors.As(err, &fe) {
			return fe.err
		}
		var se *StatusError
		if errors.As(err, &se) && !se.Retryable() {
			return err
		}
		if !connected {
			return err
		}
		if ResetsBackoff(got > 0, err) {
			delay = bo.Min
		}
		if err == nil {
			err = errors.New("the bridge ended the stream")
		}
		if o.OnDrop != nil {
			o.OnDrop(err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, bo.Max)
	}
}

// fnError carries the error of Follow's callback.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

// followOnce follows one connection until it ends; it returns how many
// events it delivered.
func (c *Client) followOnce(ctx context.Context, o FollowOptions, last *uint64, connected *bool, fn func(Event) error) (int, error) {
	so := o.StreamOptions
	so.Since = *last
	s, err := c.Open(ctx, so)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	resumed := *connected
	*connected = true
	if o.OnConnect != nil {
		o.OnConnect(resumed)
	}
	got := 0
	for {
		ev, err := s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			return got, fmt.Errorf("stream from %s: %w", c.Addr, err)
		}
		if ev.ID <= *last { // ids only grow: this one was delivered
			if o.OnDuplicate != nil {
				o.OnDuplicate(ev)
			}
			continue
		}
		if err := fn(ev); err != nil {
			return got, fnError{err}
		}
		*last = ev.ID
		got++
	}
}
