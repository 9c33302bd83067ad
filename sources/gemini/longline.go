package gemini

import (
	"bytes"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// LongLine applies what the head of a message record too long to read
// tells (the tailer skips a line over its bound and hands over its first
// bytes). Gemini CLI writes a message's id, time and type first and its
// bulk after: a reply's tool calls carry their arguments and output (a
// file written or read whole), a prompt its pasted text. So a reply's
// head still names its model, token counts and the tool calls it makes
// (a tool whose status comes after its output is taken as running: the
// next reply settles it), and a prompt's head starts its turn with the
// text it begins with as the title. The turn is right though the line is
// skipped (sources.CodeLineTooLong counts it). Patches ($set, $rewindTo)
// and records whose head names no message are left out.
func (c *Chat) LongLine(head []byte) (Change, []agentbridge.Event) {
	if !c.known || c.Whole {
		return Unchanged, nil
	}
	r, ok := headRecord(head)
	if !ok {
		return Unchanged, nil
	}
	i := c.index(r.ID)
	if i < 0 {
		i = len(c.msgs)
	} else if c.msgs[i].sum == fingerprint(head) {
		return Unchanged, nil
	}
	ch, events, _ := c.update(i, r, head)
	return ch, events
}

// headRecord decodes the message record that head begins: the members it
// holds whole, the tool calls as far as they go, and a prompt's text as
// far as it goes. ok is false when head names no message (a patch, the
// metadata line, no valid id, a type other than a prompt or a reply).
func headRecord(head []byte) (r chatRecord, ok bool) {
	texts := map[string]*string{"id": &r.ID, "timestamp": &r.Timestamp, "type": &r.Type, "model": &r.Model}
	dec := jsontext.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return r, false
	}
	for {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			break
		}
		key := tok.String()
		if key == "toolCalls" {
			r.ToolCalls = headToolCalls(dec)
			break // what follows them is read no further
		}
		at := dec.InputOffset()
		v, err := dec.ReadValue()
		if err != nil {
			if key == "content" {
				r.Content = headContent(head[at:])
			}
			break
		}
		if field := texts[key]; field != nil {
			if json.Unmarshal(v, field) != nil {
				return r, false
			}
			continue
		}
		switch key {
		case "content":
			r.Content = bytes.Clone(v)
		case "displayContent":
			r.Display = bytes.Clone(v)
		case "tokens":
			var t chatTokens
			if json.Unmarshal(v, &t) == nil {
				r.Tokens = &t
			}
		case "sessionId", "$set", "$rewindTo":
			return r, false
		}
	}
	return r, validate.ValidID(r.ID) && (r.Type == "gemini" || r.Type == "user")
}

// headToolCalls reads the tool calls of a reply from dec, positioned at
// their array, as far as the input goes: each call's id, names and status
// when they come before the end; a call cut off is kept when its id was
// read.
func headToolCalls(dec *jsontext.Decoder) []chatToolCall {
	var calls []chatToolCall
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil
	}
	for {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '{' {
			return calls
		}
		var tc chatToolCall
		for {
			tok, err := dec.ReadToken()
			if err != nil || tok.Kind() != '"' {
				break // the call's end, or the head's
			}
			var field *string
			switch tok.String() {
			case "id":
				field = &tc.ID
			case "name":
				field = &tc.Name
			case "displayName":
				field = &tc.DisplayName
			case "status":
				field = &tc.Status
			}
			if field == nil {
				if dec.SkipValue() != nil {
					break
				}
				continue
			}
			v, err := dec.ReadValue()
			if err != nil || json.Unmarshal(v, field) != nil {
				break
			}
		}
		if tc.ID == "" {
			return calls
		}
		calls = append(calls, tc)
		if dec.PeekKind() == 0 {
			return calls // cut off inside this call
		}
	}
}

// headContent returns, as a content value, the start of a content member
// cut off by the end of the head: its text as far as it goes (a string,
// or the first part's text), or a functionResponse part (a tool's
// response, no prompt).
func headContent(rest []byte) []byte {
	rest = bytes.TrimLeft(rest, " \t\r\n:")
	if len(rest) > 0 && rest[0] == '"' {
		return textContent(partialString(rest))
	}
	dec := jsontext.NewDecoder(bytes.NewReader(rest))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() != '"' {
		return nil
	}
	switch tok.String() {
	case "text":
		return textContent(partialString(rest[dec.InputOffset():]))
	case "functionResponse":
		return []byte(`[{"functionResponse":{}}]`)
	}
	return nil
}

// maxHeadText bounds the text taken from a string cut off by the head: it
// is a title at most.
const maxHeadText = 4 << 10

// partialString returns the text of the JSON string that b begins (after
// blanks and a colon), as far as it goes within maxHeadText bytes: cut
// before an escape or a character that the bound splits.
func partialString(b []byte) string {
	b = bytes.TrimLeft(b, " \t\r\n:")
	if len(b) == 0 || b[0] != '"' {
		return ""
	}
	b = b[1:min(len(b), 1+maxHeadText)]
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' {
			i++
			continue
		}
		if b[i] == '"' {
			b = b[:i] // the string ends within the bound
			break
		}
	}
	for cut := len(b); cut >= 0 && cut >= len(b)-8; cut-- {
		var s string
		if json.Unmarshal(append(append([]byte{'"'}, b[:cut]...), '"'), &s) == nil && utf8.ValidString(s) {
			return s
		}
	}
	return ""
}

// textContent is a content value holding text, or nil for none.
func textContent(text string) []byte {
	if text == "" {
		return nil
	}
	v, err := json.Marshal(text)
	if err != nil {
		return nil
	}
	return v
}
