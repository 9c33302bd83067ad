package install

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// node is a JSON value that keeps its member order and the exact text of
// its names, strings and numbers, so that a settings file read and written
// back without a change is the same bytes (in the indentation it had).
type node struct {
	kind  jsontext.Kind // '{', '[' or the scalar's kind
	names []jsontext.Value
	vals  []*node // object members or array elements
	raw   jsontext.Value
}

var errNotObject = errors.New("the file is not a JSON object")

func opts() []jsontext.Options {
	return []jsontext.Options{jsontext.PreserveRawStrings(true), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(false)}
}

// parseDoc reads a JSON object; an empty text is an empty object.
func parseDoc(b []byte) (*node, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return &node{kind: '{'}, nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(b), opts()...)
	if dec.PeekKind() != '{' {
		return nil, errNotObject
	}
	n, err := parseNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("the file has data after its JSON object")
	}
	return n, nil
}

func parseNode(dec *jsontext.Decoder) (*node, error) {
	switch k := dec.PeekKind(); k {
	case '{', '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		n := &node{kind: k}
		end := jsontext.Kind('}')
		if k == '[' {
			end = ']'
		}
		for dec.PeekKind() != end {
			if dec.PeekKind() == 0 {
				_, err := dec.ReadToken()
				return nil, fmt.Errorf("malformed JSON: %w", err)
			}
			if k == '{' {
				name, err := dec.ReadValue()
				if err != nil {
					return nil, err
				}
				n.names = append(n.names, name.Clone())
			}
			v, err := parseNode(dec)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		return n, nil
	default:
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return &node{kind: k, raw: v.Clone()}, nil
	}
}

// format renders doc as the original text was laid out: indent is "" for
// a single line, else the unit of indentation; final says whether it ended
// with a newline.
func format(doc *node, indent string, final bool) []byte {
	var buf bytes.Buffer
	o := opts()
	if indent != "" {
		o = append(o, jsontext.Multiline(true), jsontext.WithIndent(indent), jsontext.SpaceAfterColon(true))
	} else {
		o = append(o, jsontext.Multiline(false))
	}
	enc := jsontext.NewEncoder(&buf, o...)
	if err := writeNode(enc, doc); err != nil {
		panic("install: encode a parsed document: " + err.Error())
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	if final {
		out = append(out, '\n')
	}
	return out
}

func writeNode(enc *jsontext.Encoder, n *node) error {
	switch n.kind {
	case '{', '[':
		begin, end := jsontext.BeginObject, jsontext.EndObject
		if n.kind == '[' {
			begin, end = jsontext.BeginArray, jsontext.EndArray
		}
		if err := enc.WriteToken(begin); err != nil {
			return err
		}
		for i, v := range n.vals {
			if n.kind == '{' {
				if err := enc.WriteValue(n.names[i]); err != nil {
					return err
				}
			}
			if err := writeNode(enc, v); err != nil {
				return err
			}
		}
		return enc.WriteToken(end)
	default:
		return enc.WriteValue(n.raw)
	}
}

// layout guesses how a text is indented: the whitespace that starts its
// first indented line ("" when it is on one line), and whether it ends
// with a newline. A new file gets two spaces and a newline.
func layout(b []byte) (indent string, final bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return "  ", true
	}
	final = bytes.HasSuffix(b, []byte("\n"))
	for _, line := range strings.Split(string(bytes.TrimSpace(b)), "\n")[1:] {
		ws := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if ws != "" {
			return ws, final
		}
	}
	if bytes.Contains(bytes.TrimSpace(b), []byte("\n")) {
		return "  ", final
	}
	return "", final
}

func str(v jsontext.Value) string {
	var s string
	if v.Kind() != '"' {
		return ""
	}
	// PreserveRawStrings keeps escapes in the text; unquote it here
	s, err := unquote(v)
	if err != nil {
		return ""
	}
	return s
}

func unquote(v jsontext.Value) (string, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	tok, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	return tok.String(), nil
}

func quote(s string) jsontext.Value {
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf)
	if err := enc.WriteToken(jsontext.String(s)); err != nil {
		panic(err)
	}
	return jsontext.Value(bytes.TrimSpace(buf.Bytes()))
}

// get returns the member name of an object, nil if none.
func (n *node) get(name string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i, k := range n.names {
		if str(k) == name {
			return n.vals[i]
		}
	}
	return nil
}

// set adds or replaces a member.
func (n *node) set(name string, v *node) {
	for i, k := range n.names {
		if str(k) == name {
			n.vals[i] = v
			return
		}
	}
	n.names = append(n.names, quote(name))
	n.vals = append(n.vals, v)
}

// del removes a member.
func (n *node) del(name string) {
	for i, k := range n.names {
		if str(k) == name {
			n.names = append(n.names[:i:i], n.names[i+1:]...)
			n.vals = append(n.vals[:i:i], n.vals[i+1:]...)
			return
		}
	}
}

func scalar(raw string) *node {
	v := jsontext.Value(raw)
	return &node{kind: v.Kind(), raw: v}
}

func strNode(s string) *node { return &node{kind: '"', raw: quote(s)} }
