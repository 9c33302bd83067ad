package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newWatchCmd(a *app) *cobra.Command {
	var filter filterFlags
	var since uint64
	var limit int
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "follow the event stream as JSON lines, resuming after a drop",
		Long: `Follow the bridge's event stream and print each event as one JSON line
{"id", "event", "data"}. It starts with a reset per source. When the
connection drops or the bridge restarts, watch says so on stderr, resumes
after the last id it printed and says "reconnected" once it is back, so no
event is lost and none is printed twice.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usagef("--limit: %d is negative", limit)
			}
			q := url.Values{}
			if err := filter.query(q); err != nil {
				return err
			}
			c, err := newClient(cmd.Flags(), a.env)
			if err != nil {
				return err
			}
			w := &watcher{c: c, q: q, out: bufio.NewWriter(a.stdout), limit: limit, stderr: a.stderr}
			if cmd.Flags().Changed("since") {
				w.last, w.haveLast = since, true
			}
			return w.run(cmd.Context(), a.backoff)
		},
	}
	fs := cmd.Flags()
	clientFlags(fs)
	filter.register(fs)
	filter.complete(cmd)
	fs.Uint64Var(&since, "since", 0, "resume after this event `id` (the bridge replays what followed it, or sends resets)")
	fs.IntVar(&limit, "limit", 0, "stop after `n` events (0: follow until interrupted)")
	return cmd
}

// backoff is the reconnect delay: it starts at min, doubles after each
// failed attempt up to max, and starts again after a connection that
// delivered events.
type backoff struct{ min, max time.Duration }

// watchBackoff is what the command uses.
var watchBackoff = backoff{min: 250 * time.Millisecond, max: 10 * time.Second}

// maxLine bounds one stream line (a reset of 1,024 large snapshots fits).
const maxLine = 64 << 20

// streamEvent is one stream event, printed as one JSON line.
type streamEvent struct {
	ID    uint64          `json:"id"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// watcher follows the stream across reconnections.
type watcher struct {
	c        *client
	q        url.Values
	out      *bufio.Writer
	limit    int    // stop after this many events; 0 for never
	n        int    // events printed
	last     uint64 // id of the last event printed
	haveLast bool
	stderr   io.Writer // where drops and reconnections are reported
	lost     bool      // a connection was lost and not yet re-established
}

// connected is called when the bridge answers with a stream; after a drop
// it says so at once, not when that connection ends.
func (w *watcher) connected() {
	if w.lost {
		fmt.Fprintf(w.stderr, "agentbridge watch: reconnected\n")
		w.lost = false
	}
}

// errLimit ends the watch once --limit events are printed.
var errLimit = errors.New("limit reached")

// errWrite is a failure to print; it ends the watch.
type errWrite struct{ err error }

func (e errWrite) Error() string { return "write: " + e.err.Error() }
func (e errWrite) Unwrap() error { return e.err }

// run connects, prints, and on a drop resumes after the last event printed,
// waiting with backoff. Only a first connection that fails, an answer that
// asking again cannot fix (a 4xx) or a failed write ends it with an error.
func (w *watcher) run(ctx context.Context, bo backoff) error {
	delay, everConnected := bo.min, false
	for {
		connected, got, err := w.once(ctx)
		switch {
		case errors.Is(err, errLimit), ctx.Err() != nil:
			return nil
		case errors.As(err, new(errWrite)):
			return err
		}
		var he *httpError
		if errors.As(err, &he) && !he.retryable() {
			return err
		}
		if !connected && !everConnected {
			return err
		}
		if connected {
			everConnected = true
		}
		if got > 0 {
			delay = bo.min
		}
		if err == nil {
			err = errors.New("the bridge ended the stream")
		}
		if !w.lost {
			fmt.Fprintf(w.stderr, "agentbridge watch: %v; resuming\n", err)
			w.lost = true
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		delay = min(delay*2, bo.max)
	}
}

// once follows one connection until it ends. It reports whether the bridge
// answered with a stream and how many events it printed.
func (w *watcher) once(ctx context.Context) (connected bool, got int, err error) {
	q := url.Values{}
	for k, v := range w.q {
		q[k] = v
	}
	q.Set("format", "ndjson")
	if w.haveLast {
		q.Set("since", strconv.FormatUint(w.last, 10))
	}
	resp, err := w.c.do(ctx, http.MethodGet, "/v1/events", q, nil, "application/x-ndjson, text/event-stream;q=0.9")
	if err != nil {
		return false, 0, err
	}
	defer resp.Body.Close()
	w.connected()
	emit := func(ev streamEvent) error {
		line, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode event %d: %w", ev.ID, err)
		}
		line = append(line, '\n')
		if _, err := w.out.Write(line); err != nil {
			return errWrite{err}
		}
		if err := w.out.Flush(); err != nil {
			return errWrite{err}
		}
		w.last, w.haveLast = ev.ID, true
		w.n++
		got++
		if w.limit > 0 && w.n >= w.limit {
			return errLimit
		}
		return nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "text/event-stream":
		err = readSSE(resp.Body, emit)
	case "application/x-ndjson", "application/jsonl", "application/json":
		err = readNDJSON(resp.Body, emit)
	default:
		return true, 0, fmt.Errorf("agentbridge at %s: unexpected stream type %q", w.c.addr, mt)
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, errLimit) && !errors.As(err, new(errWrite)) {
		err = fmt.Errorf("stream from %s: %w", w.c.addr, err)
	}
	return true, got, err
}

// newLineScanner splits a stream into lines ended by \n, \r\n or \r (as
// SSE allows), each at most maxLine bytes.
func newLineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		i := bytes.IndexAny(data, "\r\n")
		switch {
		case i < 0:
			if atEOF && len(data) > 0 {
				return len(data), data, nil
			}
			return 0, nil, nil
		case data[i] == '\n':
			return i + 1, data[:i], nil
		case i+1 < len(data): // \r and something after it
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		case atEOF:
			return i + 1, data[:i], nil
		default:
			return 0, nil, nil // a lone \r at the end: wait for a possible \n
		}
	})
	return sc
}

// readNDJSON reads JSON lines {"id", "event", "data"}, calling emit for
// each. Blank lines (keep-alives) are skipped.
func readNDJSON(r io.Reader, emit func(streamEvent) error) error {
	sc := newLineScanner(r)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, err := parseNDJSONLine(line)
		if err != nil {
			return err
		}
		if err := emit(ev); err != nil {
			return err
		}
	}
	return sc.Err()
}

// parseNDJSONLine decodes one line of the ndjson stream. The id may be a
// number or a decimal string; data must be a JSON value.
func parseNDJSONLine(line []byte) (streamEvent, error) {
	var raw struct {
		ID    json.RawMessage `json:"id"`
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return streamEvent{}, fmt.Errorf("bad stream line: %w", err)
	}
	id, err := parseID(strings.Trim(string(raw.ID), `"`))
	if err != nil {
		return streamEvent{}, err
	}
	if raw.Event == "" || len(raw.Data) == 0 {
		return streamEvent{}, errors.New("bad stream line: event or data missing")
	}
	var data bytes.Buffer
	if err := json.Compact(&data, raw.Data); err != nil {
		return streamEvent{}, fmt.Errorf("bad stream line: %w", err)
	}
	return streamEvent{ID: id, Event: raw.Event, Data: data.Bytes()}, nil
}

func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 || id >= 1<<53 {
		return 0, fmt.Errorf("bad stream event id %q", s)
	}
	return id, nil
}

// readSSE reads a text/event-stream, calling emit for each event. Comments
// (": ping") and retry fields are skipped; every event must carry an id and
// one JSON value as data.
func readSSE(r io.Reader, emit func(streamEvent) error) error {
	var p sseParser
	sc := newLineScanner(r)
	for sc.Scan() {
		ev, ok, err := p.line(sc.Text())
		if err != nil {
			return err
		}
		if ok {
			if err := emit(ev); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

// sseParser assembles events from the lines of an event stream, following
// the WHATWG rules: "field: value" lines, one optional space after the
// colon, comments start with ':', a blank line dispatches.
type sseParser struct {
	id, event string
	data      []string
	haveData  bool
}

// line takes one line; it returns an event when the line completes one.
func (p *sseParser) line(l string) (streamEvent, bool, error) {
	if l == "" {
		defer func() { *p = sseParser{} }()
		if !p.haveData {
			return streamEvent{}, false, nil
		}
		id, err := parseID(p.id)
		if err != nil {
			return streamEvent{}, false, err
		}
		data := []byte(strings.Join(p.data, "\n"))
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			return streamEvent{}, false, fmt.Errorf("bad data of event %d: %w", id, err)
		}
		event := p.event
		if event == "" {
			event = "message"
		}
		return streamEvent{ID: id, Event: event, Data: compact.Bytes()}, true, nil
	}
	if l[0] == ':' {
		return streamEvent{}, false, nil
	}
	field, value, _ := strings.Cut(l, ":")
	value = strings.TrimPrefix(value, " ")
	switch field {
	case "id":
		if !strings.ContainsRune(value, 0) {
			p.id = value
		}
	case "event":
		p.event = value
	case "data":
		p.data = append(p.data, value)
		p.haveData = true
	}
	return streamEvent{}, false, nil
}
