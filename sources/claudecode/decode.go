package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// decoder reads transcript lines in one pass: it walks the top-level
// object and the message's content blocks, keeps the few scalar fields the
// mapper needs, and records everything else as slices of the line (never
// copied, never decoded): a long tool output or thinking block is scanned
// once and skipped.
//
// A line is first read by scanner, a strict reader that finds the end of a
// string with bytes.IndexByte instead of looking at every byte (most of a
// transcript is long strings: tool outputs, hook outputs, file contents).
// Whatever scanner does not accept — a syntax error, but also input it is
// deliberately too strict for (deep nesting, surrogate escapes) — is read
// again by jsontext, whose answer (the record or the error) is the one
// given. So scanner only ever makes valid lines cheaper, it never decides
// what a line means.
type decoder struct {
	fast scanner
	dec  jsontext.Decoder
	buf  bytes.Buffer
}

var decodeOptions = []jsontext.Options{
	jsontext.AllowDuplicateNames(true), // last one wins, as with encoding/json
	jsontext.AllowInvalidUTF8(true),    // text is bounded (and cleaned) later
}

// errSyntax describes a line that is not one JSON object, without quoting it.
type errSyntax struct{ offset int64 }

func (e errSyntax) Error() string {
	return "invalid JSON at byte " + strconv.FormatInt(e.offset, 10)
}

// decode fills r from line, which must stay unchanged while r is in use.
func (d *decoder) decode(line []byte, r *record) error {
	content := r.msg.content[:0] // keep the blocks' backing array
	*r = record{}
	r.msg.content = content
	d.fast = scanner{b: line}
	if err := d.fast.object(func(name []byte) error { return topField(&d.fast, name, r) }); err == nil && d.fast.end() {
		return nil
	}
	*r = record{}
	r.msg.content = content[:0]
	return d.slow(line, r)
}

// slow is decode by jsontext alone.
func (d *decoder) slow(line []byte, r *record) error {
	d.buf.Reset()
	d.buf.Write(line) // bytes.Buffer: jsontext parses it in place
	d.dec.Reset(&d.buf, decodeOptions...)
	j := jsonReader{dec: &d.dec, src: d.buf.Bytes()}
	if err := j.object(func(name []byte) error { return topField(j, name, r) }); err != nil {
		return err
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return errSyntax{d.dec.InputOffset()}
	}
	return nil
}

// reader is what the field mapping below needs of a JSON reader.
type reader interface {
	// object reads one JSON object, calling field for each name with the
	// reader positioned before its value; field must consume the value.
	object(field func(name []byte) error) error
	// objectRaw is object, returning the object as a slice of the line.
	objectRaw(field func(name []byte) error) ([]byte, error)
	// array reads one JSON array, calling elem before each element; elem
	// must consume it.
	array(elem func() error) error
	// peek returns the kind of the next value: '{', '[', '"', 't', 'f',
	// 'n', '0' (a number), or 0 when there is none.
	peek() byte
	// raw consumes the next value and returns it as a slice of the line.
	raw() ([]byte, error)
	// skip consumes the next value.
	skip() error
}

// str consumes the next value and returns it as a string when it is one
// ("" otherwise).
func str(rd reader) (string, error) {
	v, err := rd.raw()
	if err != nil || len(v) == 0 || v[0] != '"' {
		return "", err
	}
	return unquote(v), nil
}

// boolean consumes the next value and reports whether it is true.
func boolean(rd reader) (bool, error) {
	v, err := rd.raw()
	return len(v) == 4 && string(v) == "true", err
}

// unquote returns the text of a raw JSON string.
func unquote(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	b, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		var s string
		_ = json.Unmarshal(v, &s)
		return s
	}
	return string(b)
}

func topField(rd reader, name []byte, r *record) (err error) {
	switch string(name) { // no allocation: the compiler compares in place
	case "type":
		r.Type, err = str(rd)
	case "subtype":
		r.Subtype, err = str(rd)
	case "uuid":
		r.UUID, err = str(rd)
	case "promptId":
		r.PromptID, err = str(rd)
	case "sessionId":
		r.SessionID, err = str(rd)
	case "cwd":
		r.Cwd, err = str(rd)
	case "timestamp":
		r.Timestamp, err = str(rd)
	case "version":
		r.Version, err = str(rd)
	case "customTitle":
		r.CustomTitle, err = str(rd)
	case "aiTitle":
		r.AITitle, err = str(rd)
	case "summary":
		r.Summary, err = str(rd)
	case "isSidechain":
		r.IsSidechain, err = boolean(rd)
	case "isMeta":
		r.IsMeta, err = boolean(rd)
	case "isCompactSummary":
		r.IsCompact, err = boolean(rd)
	case "isVisibleInTranscriptOnly":
		r.IsVisibleTO, err = boolean(rd)
	case "isApiErrorMessage":
		r.IsAPIError, err = boolean(rd)
	case "error":
		r.Error, err = rd.raw()
	case "apiErrorStatus":
		r.APIStatus, err = rd.raw()
	case "toolUseResult":
		r.ToolUseResult, err = rd.raw()
	case "attachment":
		if rd.peek() != '{' {
			r.Attachment, err = rd.raw()
			return err
		}
		r.Attachment, err = rd.objectRaw(func(n []byte) error { return attachmentField(rd, n, r) })
	case "origin":
		var v []byte
		v, err = rd.raw()
		if err == nil && bytes.Contains(v, []byte("task-notification")) {
			r.Origin = &struct {
				Kind string `json:"kind"`
			}{}
			_ = json.Unmarshal(v, r.Origin)
		}
	case "message":
		if rd.peek() != '{' {
			_, err = rd.raw()
			return err
		}
		r.hasMsg = true
		err = rd.object(func(n []byte) error { return messageField(rd, n, &r.msg) })
	default:
		err = rd.skip()
	}
	return err
}

// attachmentField notes whether the attachment may be a queued command:
// whether a name that encoding/json would match to its "type" (any case;
// an escaped name is not looked into) has the string "queued_command".
// Only such an attachment is looked at further (see Mapper.record), so
// that a long hook output is not searched for a task notification.
func attachmentField(rd reader, name []byte, r *record) error {
	escaped := bytes.IndexByte(name, '\\') >= 0
	if !escaped && !bytes.EqualFold(name, []byte("type")) {
		return rd.skip()
	}
	v, err := rd.raw()
	if err == nil && (escaped || (len(v) > 0 && v[0] == '"' && unquote(v) == "queued_command")) {
		r.attQueued = true
	}
	return err
}

func messageField(rd reader, name []byte, m *message) (err error) {
	switch string(name) {
	case "id":
		m.ID, err = str(rd)
	case "usage":
		m.usage, err = rd.raw()
	case "model":
		m.Model, err = str(rd)
	case "stop_reason":
		m.StopReason, err = str(rd)
	case "content":
		switch rd.peek() {
		case '"':
			var v []byte
			if v, err = rd.raw(); err == nil {
				m.content = append(m.content[:0], block{Type: "text", textRaw: v})
			}
		case '[':
			err = rd.array(func() error {
				if rd.peek() != '{' {
					return rd.skip() // a malformed block is skipped, not the record
				}
				m.content = append(m.content, block{})
				b := &m.content[len(m.content)-1]
				return rd.object(func(n []byte) error { return blockField(rd, n, b) })
			})
		default:
			_, err = rd.raw()
		}
	default:
		err = rd.skip()
	}
	return err
}

func blockField(rd reader, name []byte, b *block) (err error) {
	switch string(name) {
	case "type":
		b.Type, err = str(rd)
	case "text":
		b.textRaw, err = rd.raw()
	case "id":
		b.ID, err = str(rd)
	case "name":
		b.Name, err = str(rd)
	case "tool_use_id":
		b.ToolUseID, err = str(rd)
	case "is_error":
		b.IsError, err = boolean(rd)
	case "input":
		b.Input, err = rd.raw()
	case "content":
		b.Content, err = rd.raw()
	default:
		err = rd.skip()
	}
	return err
}

// jsonReader is reader over a jsontext.Decoder.
type jsonReader struct {
	dec *jsontext.Decoder
	src []byte // what dec reads, in place
}

func (j jsonReader) fail() error { return errSyntax{j.dec.InputOffset()} }

func (j jsonReader) object(field func(name []byte) error) error {
	_, err := j.objectRaw(field)
	return err
}

func (j jsonReader) objectRaw(field func(name []byte) error) ([]byte, error) {
	tok, err := j.dec.ReadToken()
	if err != nil || tok.Kind() != '{' {
		return nil, j.fail()
	}
	start := j.dec.InputOffset() - 1
	for j.dec.PeekKind() != '}' {
		name, err := j.dec.ReadValue()
		if err != nil || len(name) < 2 || name[0] != '"' {
			return nil, j.fail()
		}
		if err := field(name[1 : len(name)-1]); err != nil {
			return nil, err
		}
	}
	if _, err := j.dec.ReadToken(); err != nil {
		return nil, j.fail()
	}
	return j.src[start:j.dec.InputOffset()], nil
}

func (j jsonReader) array(elem func() error) error {
	if _, err := j.dec.ReadToken(); err != nil {
		return j.fail()
	}
	for j.dec.PeekKind() != ']' {
		if err := elem(); err != nil {
			return err
		}
	}
	if _, err := j.dec.ReadToken(); err != nil {
		return j.fail()
	}
	return nil
}

func (j jsonReader) peek() byte { return byte(j.dec.PeekKind()) }

func (j jsonReader) raw() ([]byte, error) {
	v, err := j.dec.ReadValue()
	if err != nil {
		return nil, j.fail()
	}
	end := j.dec.InputOffset()
	return j.src[end-int64(len(v)) : end], nil
}

func (j jsonReader) skip() error {
	if err := j.dec.SkipValue(); err != nil {
		return j.fail()
	}
	return nil
}

// errFast is scanner's only error: the line is read again by jsontext.
var errFast = errors.New("not read by the fast path")

// maxFastDepth bounds scanner's recursion; deeper values go to jsontext.
const maxFastDepth = 64

// scanner is reader over one line in memory. It accepts only JSON that
// jsontext (with decodeOptions) accepts too, and gives the same values.
type scanner struct {
	b     []byte
	i     int
	depth int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	switch c := s.b[s.i]; c {
	case '{', '[', '"', 't', 'f', 'n':
		return c
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0'
	}
	return 0
}

// next consumes the byte c, after white space.
func (s *scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) object(field func(name []byte) error) error {
	if !s.next('{') || s.depth >= maxFastDepth {
		return errFast
	}
	s.depth++
	if !s.next('}') {
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return errFast
			}
			name, ok := s.string()
			if !ok || !s.next(':') {
				return errFast
			}
			if bytes.IndexByte(name, '\\') >= 0 {
				return errFast // escaped names are rare: let jsontext unquote them
			}
			if err := field(name[1 : len(name)-1]); err != nil {
				return err
			}
			if s.next('}') {
				break
			}
			if !s.next(',') {
				return errFast
			}
		}
	}
	s.depth--
	return nil
}

func (s *scanner) objectRaw(field func(name []byte) error) ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.object(field); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

func (s *scanner) array(elem func() error) error {
	if !s.next('[') || s.depth >= maxFastDepth {
		return errFast
	}
	s.depth++
	if !s.next(']') {
		for {
			if err := elem(); err != nil {
				return err
			}
			if s.next(']') {
				break
			}
			if !s.next(',') {
				return errFast
			}
		}
	}
	s.depth--
	return nil
}

func (s *scanner) raw() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.skip(); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

func (s *scanner) skip() error {
	switch s.peek() {
	case '{':
		return s.object(func([]byte) error { return s.skip() })
	case '[':
		return s.array(s.skip)
	case '"':
		if _, ok := s.string(); !ok {
			return errFast
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case '0':
		return s.number()
	default:
		return errFast
	}
	return nil
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return errFast
	}
	s.i += len(lit)
	return nil
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	b, i := s.b, s.i
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return errFast
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return errFast
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return errFast
		}
	}
	s.i = i
	return nil
}

// string consumes the string at s.i (its opening quote) and returns it
// with its quotes. The ends of the string and of its escapes are found
// with bytes.IndexByte; the bytes between are checked eight at a time for
// control characters, which JSON does not allow raw. Invalid UTF-8 is
// accepted (as by decodeOptions); a \u escape of a surrogate is left to
// jsontext.
func (s *scanner) string() ([]byte, bool) {
	b, start := s.b, s.i
	i, q := start+1, -1
	for {
		if q < i {
			n := bytes.IndexByte(b[i:], '"')
			if n < 0 {
				return nil, false
			}
			q = i + n
		}
		n := bytes.IndexByte(b[i:q], '\\')
		if n < 0 {
			if hasControl(b[i:q]) {
				return nil, false
			}
			s.i = q + 1
			return b[start:s.i], true
		}
		e := i + n // the backslash
		if hasControl(b[i:e]) || e+1 >= len(b) {
			return nil, false
		}
		switch b[e+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i = e + 2
		case 'u':
			if e+6 > len(b) {
				return nil, false
			}
			v, err := strconv.ParseUint(string(b[e+2:e+6]), 16, 16)
			if err != nil || (v >= 0xD800 && v <= 0xDFFF) {
				return nil, false
			}
			i = e + 6
		default:
			return nil, false
		}
	}
}

// hasControl reports whether b holds a byte below 0x20.
func hasControl(b []byte) bool {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	for len(b) >= 8 {
		x := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		if (x-lo)&^x&hi != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// eachField calls f with the unquoted name and the raw value of every
// field of the JSON object obj, which must be valid JSON (a slice of a
// line the decoder read). It reports false when obj is not an object.
func eachField(obj []byte, f func(name string, v []byte)) bool {
	s := scanner{b: obj}
	err := s.object(func(name []byte) error {
		v, err := s.raw()
		if err == nil {
			f(string(name), v) // no allocation when f only compares
		}
		return err
	})
	return err == nil && s.end()
}

// jsonString returns the string a raw JSON string value decodes to with
// encoding/json (invalid UTF-8 replaced as it does), and false for another
// kind of value.
func jsonString(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	for _, c := range v {
		if c == '\\' || c >= 0x80 {
			var s string
			return s, json.Unmarshal(v, &s) == nil
		}
	}
	return string(v[1 : len(v)-1]), true
}

// agentResultOf reads the status and agentId of an Agent/Task
// toolUseResult as json.Unmarshal into agentResult does (names in any
// case, the last one wins, null and other kinds leave the field), without
// decoding the rest: the result holds the subagent's whole answer.
func agentResultOf(raw []byte) (res agentResult) {
	if len(raw) == 0 || raw[0] != '{' {
		return res
	}
	if !eachField(raw, func(name string, v []byte) {
		var dst *string
		switch {
		case strings.EqualFold(name, "status"):
			dst = &res.Status
		case strings.EqualFold(name, "agentId"):
			dst = &res.AgentID
		default:
			return
		}
		if s, ok := jsonString(v); ok {
			*dst = s
		}
	}) {
		_ = json.Unmarshal(raw, &res) // names with escapes: as before
	}
	return res
}

// usageOf decodes a message's usage object as json.Unmarshal into
// apiUsage does, and whether it would succeed: the four counts by name in
// any case (the last one wins, null leaves a count), each an integer that
// fits (anything else is an error); other fields are skipped unread.
func usageOf(raw []byte) (a apiUsage, ok bool) {
	ok = true
	if !eachField(raw, func(name string, v []byte) {
		var dst *int64
		switch {
		case strings.EqualFold(name, "input_tokens"):
			dst = &a.Input
		case strings.EqualFold(name, "output_tokens"):
			dst = &a.Output
		case strings.EqualFold(name, "cache_read_input_tokens"):
			dst = &a.CacheRead
		case strings.EqualFold(name, "cache_creation_input_tokens"):
			dst = &a.CacheWrite
		default:
			return
		}
		if string(v) == "null" {
			return
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || (len(v) > 0 && v[0] == '+') {
			ok = false
			return
		}
		*dst = n
	}) {
		a = apiUsage{}
		return a, json.Unmarshal(raw, &a) == nil
	}
	return a, ok
}
