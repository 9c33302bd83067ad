package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/agentbridge/agentbridge/hub"
)

// Format is the wire form of the stream.
type Format int

// The two forms GET /v1/events speaks.
const (
	SSE    Format = iota // text/event-stream
	NDJSON               // application/x-ndjson: one {"id","event","data"} a line
)

func (f Format) String() string {
	if f == NDJSON {
		return "ndjson"
	}
	return "sse"
}

// The stream record names (the SSE event field).
const (
	NameReset      = hub.NameReset
	NameUpsert     = hub.NameUpsert
	NameRemove     = hub.NameRemove
	NameDiagnostic = hub.NameDiagnostic
	NameLifecycle  = hub.NameLifecycle
	NameHarnesses  = hub.NameHarnesses
)

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

// Reader decodes a stream read from an io.Reader.
type Reader struct {
	sc     *bufio.Scanner
	format Format
	// Ping, when set, is called for every heartbeat: a comment line of
	// SSE, a blank line of NDJSON.
	Ping func()

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
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(4<<10, maxLine)), maxLine)
	sc.Split(splitLines)
	return &Reader{sc: sc, format: f}
}

// Next returns the next event. At the end of r it returns io.EOF (an
// unfinished SSE event at the end is dropped, as the SSE rules say); an
// error wraps ErrBadEvent, ErrLineTooLong or the error of r.
func (r *Reader) Next() (Event, error) {
	for r.sc.Scan() {
		line := r.sc.Bytes()
		var (
			ev  Event
			ok  bool
			err error
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
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, ErrLineTooLong
		}
		return Event{}, err
	}
	return Event{}, io.EOF
}

// splitLines splits a stream into lines ended by \n, \r\n or \r (as SSE
// allows).
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
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
// event is compact JSON.
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

// compact returns b as compact JSON in a buffer of its own.
func compact(b []byte) (json.RawMessage, error) {
	var out bytes.Buffer
	out.Grow(len(b))
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
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
		r.id, r.name, r.data, r.haveData = r.id[:0], r.name[:0], r.data[:0], false
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
		if r.haveData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
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
	data, err := compact(r.data)
	if err != nil {
		return Event{}, badEvent("the data of event %d is not JSON", id)
	}
	return Event{ID: id, Name: eventName(r.name), Data: data}, nil
}

// eventName returns the record name, without allocating for the known
// ones; an event without a name is a "message".
func eventName(b []byte) string {
	switch string(b) {
	case "":
		return "message"
	case NameReset:
		return NameReset
	case NameUpsert:
		return NameUpsert
	case NameRemove:
		return NameRemove
	case NameDiagnostic:
		return NameDiagnostic
	case NameLifecycle:
		return NameLifecycle
	case NameHarnesses:
		return NameHarnesses
	}
	return string(b)
}
