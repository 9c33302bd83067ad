package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/agentbridge/agentbridge"
)

// Format is the wire form of the stream.
type Format int

// The two forms GET /v1/events speaks.
const (
	SSE    Format = iota // text/event-stream
	NDJSON               // application/x-ndjson: one {"id","event","data"} a line
)

// String is the format's name as the query parameter spells it.
func (f Format) String() string {
	if f == NDJSON {
		return "ndjson"
	}
	return "sse"
}

// Event is one record of the stream. Its JSON form is the NDJSON line
// (and what `agentbridge watch` prints).
type Event struct {
	ID   uint64          `json:"id"`    // the revision; > 0 and < 2^53
	Name string          `json:"event"` // reset, upsert, remove, diagnostic, lifecycle, harnesses
	Data json.RawMessage `json:"data"`  // one compact JSON value, never empty
}

// MaxLine is the longest line a Reader accepts by default: a reset of
// 1,024 large snapshots fits.
const MaxLine = 64 << 20

// ErrBadEvent is (wrapped in) the error of a stream that breaks its
// grammar: a line that is not an event, an id that is not a revision, data
// that is not JSON. Its message quotes no data.
var ErrBadEvent = errors.New("bad stream event")

// ErrLineTooLong is (wrapped in) the error of a line longer than the
// Reader's limit.
var ErrLineTooLong = errors.New("stream line too long")

func badEvent(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadEvent, fmt.Sprintf(format, a...))
}

// keep is the largest buffer a Reader holds on to between events: one
// large reset does not make a thousand idle clients hold its size each.
const keep = 64 << 10

// Reader decodes a stream read from an io.Reader. It holds a 4 KiB buffer
// and, while an event is larger, what that event needs.
type Reader struct {
	lines  lineReader
	format Format
	// Ping, when set, is called for every heartbeat: a comment line of
	// SSE, a blank line of NDJSON.
	Ping func()
	// SkipData, set before the first Next of an SSE Reader, makes it
	// deliver events without their Data, neither holding nor checking it:
	// for a client that only counts events or waits for ids, at the cost
	// of 4 KiB however large an event is. NDJSON readers ignore it.
	SkipData bool

	// the SSE event being assembled
	id, name []byte
	data     []byte
	haveData bool
}

// NewReader returns a Reader of r in format f whose lines may be up to
// maxLine bytes long (0: MaxLine).
func NewReader(r io.Reader, f Format, maxLine int) *Reader {
	if maxLine <= 0 {
		maxLine = MaxLine
	}
	return &Reader{lines: lineReader{rd: r, buf: make([]byte, 4<<10), max: maxLine}, format: f}
}

// Format is the wire form the Reader decodes.
func (r *Reader) Format() Format { return r.format }

// Next returns the next event. Its Data is valid until the next call of
// Next (bytes.Clone it to keep it); the other fields stay. At the end of r
// it returns io.EOF (an unfinished SSE event at the end is dropped, as the
// SSE rules say); an error wraps ErrBadEvent, ErrLineTooLong or the error
// of r.
func (r *Reader) Next() (Event, error) {
	if cap(r.data) > keep {
		r.data = nil
	}
	r.lines.truncate = r.SkipData && r.format == SSE
	for {
		line, err := r.lines.next()
		if err != nil {
			return Event{}, err
		}
		var (
			ev Event
			ok bool
		)
		if r.format == NDJSON {
			ev, ok, err = r.ndjsonLine(line)
		} else {
			ev, ok, err = r.sseLine(line)
		}
		if err != nil || ok {
			return ev, err
		}
	}
}

// lineReader splits a stream into lines ended by \n, \r\n or \r (as SSE
// allows). A line is valid until the next call.
type lineReader struct {
	rd     io.Reader
	buf    []byte
	r, w   int
	long   []byte // a line longer than what buf holds
	max    int
	skipLF bool // the last line ended with \r: a \n right after it belongs to it
	err    error
	// truncate keeps only the first part of a long line (up to the size
	// of buf) and drops the rest: no limit applies.
	truncate bool
}

func (l *lineReader) next() ([]byte, error) {
	if cap(l.long) > keep {
		l.long = nil
	}
	l.long = l.long[:0]
	for {
		if l.skipLF && l.r < l.w {
			if l.buf[l.r] == '\n' {
				l.r++
			}
			l.skipLF = false
		}
		if i := bytes.IndexAny(l.buf[l.r:l.w], "\r\n"); i >= 0 {
			if len(l.long)+i > l.max && !l.truncate {
				return nil, ErrLineTooLong
			}
			line := l.buf[l.r : l.r+i]
			l.skipLF = l.buf[l.r+i] == '\r'
			l.r += i + 1
			if len(l.long) > 0 {
				l.long = l.appendLong(line)
				line = l.long
			}
			return line, nil
		}
		if len(l.long)+(l.w-l.r) > l.max && !l.truncate {
			return nil, ErrLineTooLong
		}
		if l.err != nil {
			if l.r < l.w || len(l.long) > 0 { // the last line has no end
				l.long = l.appendLong(l.buf[l.r:l.w])
				l.r = l.w
				line := l.long
				l.long = l.long[len(l.long):]
				return line, nil
			}
			return nil, l.err
		}
		// no line end in what is buffered: keep it aside, read on
		l.long = l.appendLong(l.buf[l.r:l.w])
		l.r, l.w = 0, 0
		n, err := l.rd.Read(l.buf[l.w:])
		l.w += n
		if err != nil {
			l.err = err
		}
	}
}

// appendLong adds b to the long line; when truncating, only as far as the
// size of buf.
func (l *lineReader) appendLong(b []byte) []byte {
	if l.truncate {
		b = b[:min(len(b), max(0, len(l.buf)-len(l.long)))]
	}
	return append(l.long, b...)
}

// ndjsonLine decodes one line of the JSON-lines stream.
func (r *Reader) ndjsonLine(line []byte) (Event, bool, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		if r.Ping != nil {
			r.Ping()
		}
		return Event{}, false, nil
	}
	ev, err := ParseNDJSON(line)
	return ev, err == nil, err
}

// ParseNDJSON decodes one line of the JSON-lines stream. The id may be a
// number or a decimal string; data must be a JSON value. The data of the
// event is compact JSON in a buffer of its own.
func ParseNDJSON(line []byte) (Event, error) {
	var raw struct {
		ID    json.RawMessage `json:"id"`
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Event{}, badEvent("a line is not a JSON object of id, event and data")
	}
	id, err := parseID(bytes.Trim(raw.ID, `"`))
	if err != nil {
		return Event{}, err
	}
	if raw.Event == "" || len(raw.Data) == 0 {
		return Event{}, badEvent("event %d has no event name or no data", id)
	}
	data, err := compact(raw.Data)
	if err != nil {
		return Event{}, badEvent("the data of event %d is not JSON", id)
	}
	return Event{ID: id, Name: raw.Event, Data: data}, nil
}

// parseID reads a revision: a decimal in [1, 2^53).
func parseID(s []byte) (uint64, error) {
	id, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil || id == 0 || id >= 1<<53 {
		return 0, badEvent("an event id is not a revision")
	}
	return id, nil
}

// compact returns b as compact JSON: b itself when it is compact already
// (what the bridge sends), else a compacted copy.
func compact(b []byte) (json.RawMessage, error) {
	if !json.Valid(b) {
		return nil, errors.New("not JSON")
	}
	if isCompact(b) {
		return b, nil
	}
	var out bytes.Buffer
	out.Grow(len(b))
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// isCompact reports whether valid JSON b has no white space outside its
// strings.
func isCompact(b []byte) bool {
	in, esc := false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// sseLine takes one line of an event stream, following the WHATWG rules:
// "field: value" lines, one optional space after the colon, comments start
// with ':', a blank line dispatches. Every event must carry an id and one
// JSON value as data; retry and unknown fields are skipped.
func (r *Reader) sseLine(l []byte) (Event, bool, error) {
	if len(l) == 0 {
		if !r.haveData {
			r.id, r.name = r.id[:0], r.name[:0]
			return Event{}, false, nil
		}
		ev, err := r.dispatch()
		r.id, r.name, r.haveData = r.id[:0], r.name[:0], false
		return ev, err == nil, err
	}
	if l[0] == ':' {
		if r.Ping != nil {
			r.Ping()
		}
		return Event{}, false, nil
	}
	field, value, _ := bytes.Cut(l, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.id = append(r.id[:0], value...)
		}
	case "event":
		r.name = append(r.name[:0], value...)
	case "data":
		switch {
		case r.SkipData:
		case r.haveData:
			r.data = append(append(r.data, '\n'), value...)
		case len(value) > keep && len(r.lines.long) > 0 && &r.lines.long[0] == &l[0]:
			// a long line the line reader assembled: take it over
			// instead of copying it
			r.data, r.lines.long = r.lines.long[len(l)-len(value):len(l)], nil
		default:
			r.data = append(r.data[:0], value...)
		}
		r.haveData = true
	}
	return Event{}, false, nil
}

// dispatch makes the assembled SSE event.
func (r *Reader) dispatch() (Event, error) {
	id, err := parseID(r.id)
	if err != nil {
		return Event{}, err
	}
	if r.SkipData {
		return Event{ID: id, Name: eventName(r.name)}, nil
	}
	data, err := compact(r.data)
	if err != nil {
		return Event{}, badEvent("the data of event %d is not JSON", id)
	}
	return Event{ID: id, Name: eventName(r.name), Data: data}, nil
}

// eventName returns the record name, without allocating for the known
// ones; an event without a name is a "message".
func eventName(b []byte) string {
	if len(b) == 0 {
		return "message"
	}
	for _, n := range agentbridge.RecordNames {
		if string(b) == n {
			return n
		}
	}
	return string(b)
}
