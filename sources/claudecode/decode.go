package claudecode

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// decoder reads transcript lines in one pass with jsontext: it walks the
// top-level object and the message's content blocks, keeps the few scalar
// fields the mapper needs, and records everything else as slices of the
// line (never copied, never decoded): a long tool output or thinking block
// is scanned once and skipped.
type decoder struct {
	dec jsontext.Decoder
	buf bytes.Buffer
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
	*r = record{}
	d.buf.Reset()
	d.buf.Write(line) // bytes.Buffer: jsontext parses it in place
	d.dec.Reset(&d.buf, decodeOptions...)
	src := d.buf.Bytes()
	if err := d.object(src, func(name []byte) error { return d.topField(src, name, r) }); err != nil {
		return err
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return errSyntax{d.dec.InputOffset()}
	}
	return nil
}

// object reads one JSON object, calling field for each name with the
// decoder positioned before its value; field must consume the value.
func (d *decoder) object(src []byte, field func(name []byte) error) error {
	tok, err := d.dec.ReadToken()
	if err != nil || tok.Kind() != '{' {
		return errSyntax{d.dec.InputOffset()}
	}
	for d.dec.PeekKind() != '}' {
		name, err := d.dec.ReadValue()
		if err != nil || len(name) < 2 || name[0] != '"' {
			return errSyntax{d.dec.InputOffset()}
		}
		if err := field(name[1 : len(name)-1]); err != nil {
			return err
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return errSyntax{d.dec.InputOffset()}
	}
	return nil
}

// raw consumes the next value and returns it as a slice of src.
func (d *decoder) raw(src []byte) ([]byte, error) {
	v, err := d.dec.ReadValue()
	if err != nil {
		return nil, errSyntax{d.dec.InputOffset()}
	}
	end := d.dec.InputOffset()
	return src[end-int64(len(v)) : end], nil
}

// str consumes the next value and returns it as a string when it is one
// ("" otherwise).
func (d *decoder) str(src []byte) (string, error) {
	v, err := d.raw(src)
	if err != nil || len(v) == 0 || v[0] != '"' {
		return "", err
	}
	return unquote(v), nil
}

// boolean consumes the next value and reports whether it is true.
func (d *decoder) boolean(src []byte) (bool, error) {
	v, err := d.raw(src)
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

func (d *decoder) topField(src, name []byte, r *record) (err error) {
	switch string(name) { // no allocation: the compiler compares in place
	case "type":
		r.Type, err = d.str(src)
	case "subtype":
		r.Subtype, err = d.str(src)
	case "uuid":
		r.UUID, err = d.str(src)
	case "promptId":
		r.PromptID, err = d.str(src)
	case "sessionId":
		r.SessionID, err = d.str(src)
	case "cwd":
		r.Cwd, err = d.str(src)
	case "timestamp":
		r.Timestamp, err = d.str(src)
	case "customTitle":
		r.CustomTitle, err = d.str(src)
	case "aiTitle":
		r.AITitle, err = d.str(src)
	case "summary":
		r.Summary, err = d.str(src)
	case "isSidechain":
		r.IsSidechain, err = d.boolean(src)
	case "isMeta":
		r.IsMeta, err = d.boolean(src)
	case "isCompactSummary":
		r.IsCompact, err = d.boolean(src)
	case "isVisibleInTranscriptOnly":
		r.IsVisibleTO, err = d.boolean(src)
	case "isApiErrorMessage":
		r.IsAPIError, err = d.boolean(src)
	case "error":
		r.Error, err = d.raw(src)
	case "apiErrorStatus":
		r.APIStatus, err = d.raw(src)
	case "toolUseResult":
		r.ToolUseResult, err = d.raw(src)
	case "attachment":
		r.Attachment, err = d.raw(src)
	case "origin":
		var v []byte
		v, err = d.raw(src)
		if err == nil && bytes.Contains(v, []byte("task-notification")) {
			r.Origin = &struct {
				Kind string `json:"kind"`
			}{}
			_ = json.Unmarshal(v, r.Origin)
		}
	case "message":
		if d.dec.PeekKind() != '{' {
			_, err = d.raw(src)
			return err
		}
		r.hasMsg = true
		err = d.object(src, func(n []byte) error { return d.messageField(src, n, &r.msg) })
	default:
		if err = d.dec.SkipValue(); err != nil {
			err = errSyntax{d.dec.InputOffset()}
		}
	}
	return err
}

func (d *decoder) messageField(src, name []byte, m *message) (err error) {
	switch string(name) {
	case "id":
		m.ID, err = d.str(src)
	case "usage":
		m.usage, err = d.raw(src)
	case "model":
		m.Model, err = d.str(src)
	case "stop_reason":
		m.StopReason, err = d.str(src)
	case "content":
		switch d.dec.PeekKind() {
		case '"':
			var v []byte
			if v, err = d.raw(src); err == nil {
				m.content = append(m.content[:0], block{Type: "text", textRaw: v})
			}
		case '[':
			if _, err = d.dec.ReadToken(); err != nil {
				return errSyntax{d.dec.InputOffset()}
			}
			for d.dec.PeekKind() != ']' {
				if d.dec.PeekKind() != '{' {
					if err = d.dec.SkipValue(); err != nil {
						return errSyntax{d.dec.InputOffset()}
					}
					continue // a malformed block is skipped, not the record
				}
				var b block
				if err = d.object(src, func(n []byte) error { return d.blockField(src, n, &b) }); err != nil {
					return err
				}
				m.content = append(m.content, b)
			}
			if _, err = d.dec.ReadToken(); err != nil {
				return errSyntax{d.dec.InputOffset()}
			}
		default:
			_, err = d.raw(src)
		}
	default:
		if err = d.dec.SkipValue(); err != nil {
			err = errSyntax{d.dec.InputOffset()}
		}
	}
	return err
}

func (d *decoder) blockField(src, name []byte, b *block) (err error) {
	switch string(name) {
	case "type":
		b.Type, err = d.str(src)
	case "text":
		b.textRaw, err = d.raw(src)
	case "id":
		b.ID, err = d.str(src)
	case "name":
		b.Name, err = d.str(src)
	case "tool_use_id":
		b.ToolUseID, err = d.str(src)
	case "is_error":
		b.IsError, err = d.boolean(src)
	case "input":
		b.Input, err = d.raw(src)
	case "content":
		b.Content, err = d.raw(src)
	default:
		if err = d.dec.SkipValue(); err != nil {
			err = errSyntax{d.dec.InputOffset()}
		}
	}
	return err
}
