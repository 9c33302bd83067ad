package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/tailscale/hujson"
)

// A settings file is edited in its own syntax tree (hujson keeps every
// comment, space and line break of the user's text): what install adds is
// laid out like its neighbours, and nothing else moves, so a compact file
// stays compact and a commented one keeps its comments.

// dialect is what a harness's agent reads back of a settings file.
type dialect struct {
	comments bool // "//" and "/* */" comments (Gemini CLI and Qwen Code strip them)
}

var errNotObject = errors.New("the file is not a JSON object")

// utf8BOM starts a text written by some Windows editors.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// checkBOM refuses a text that starts with a byte order mark the agent
// would not read back: for JSON every BOM (JSON.parse and serde_json
// reject a leading U+FEFF), for TOML the UTF-16 and UTF-32 ones (Codex
// reads UTF-8 only). It returns the text after a UTF-8 BOM the reader
// takes (utf8OK) and whether there was one.
func checkBOM(b []byte, utf8OK bool) (rest []byte, bom bool, err error) {
	switch {
	case bytes.HasPrefix(b, []byte{0, 0, 0xFE, 0xFF}), bytes.HasPrefix(b, []byte{0xFF, 0xFE, 0, 0}):
		return nil, false, errors.New("the file is UTF-32 encoded (it starts with a UTF-32 byte order mark); save it as UTF-8")
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}), bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return nil, false, errors.New("the file is UTF-16 encoded (it starts with a UTF-16 byte order mark); save it as UTF-8")
	case bytes.HasPrefix(b, utf8BOM) && !utf8OK:
		return nil, false, errors.New("the file starts with a byte order mark (U+FEFF), which the agent does not read; remove it")
	case bytes.HasPrefix(b, utf8BOM):
		return b[len(utf8BOM):], true, nil
	}
	return b, false, nil
}

// doc is a parsed settings object.
type doc struct {
	root hujson.Value
	unit string // one level of indentation ("" for a file on one line)
	nl   string // the line break: "\r\n" in a file that uses it, else "\n"
	// spaced: the text puts a space after a name's colon ("a": 1), so
	// what install writes on one line does too
	spaced bool
}

// parseDoc reads a settings object; an empty text is an empty object. It
// refuses what the agent would read differently from install: a byte
// order mark, comments or trailing commas the agent does not take, a name
// twice in one object (the agent takes one, an edit the other), invalid
// UTF-8.
func parseDoc(b []byte, d dialect) (*doc, error) {
	if _, _, err := checkBOM(b, false); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return &doc{root: hujson.Value{Value: &hujson.Object{}}, unit: "  ", nl: "\n", spaced: true}, nil
	}
	if err := checkDepth(b); err != nil {
		return nil, err
	}
	v, err := hujson.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("malformed JSON: %s", strings.TrimPrefix(err.Error(), "hujson: "))
	}
	if _, ok := v.Value.(*hujson.Object); !ok {
		return nil, errNotObject
	}
	if err := strict(v, d); err != nil {
		return nil, err
	}
	nl := "\n"
	if bytes.Contains(b, []byte("\r\n")) {
		nl = "\r\n"
	}
	return &doc{root: v, unit: indentUnit(b), nl: nl, spaced: bytes.Contains(b, []byte(`": `))}, nil
}

// maxDepth bounds how deeply a settings file nests objects and arrays
// (the agents' settings nest a handful of levels): the parser recurses
// once per level, and a file of four million "[" would exhaust the stack.
const maxDepth = 256

// checkDepth refuses a text that nests deeper than maxDepth, counting the
// brackets outside strings and comments.
func checkDepth(b []byte) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return nil // unterminated: the parser says so
			}
			i += 2 + end + 1
		case c == '{' || c == '[':
			if depth++; depth > maxDepth {
				return fmt.Errorf("the file nests objects and arrays deeper than %d levels", maxDepth)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// strict checks v the way the agent reads it: the standard JSON it is
// (comments removed where the agent removes them) must be read by a strict
// decoder that refuses duplicate names and invalid UTF-8.
func strict(v hujson.Value, d dialect) error {
	for w := range v.All() {
		if trailingComma(w) {
			return errors.New("the file has a trailing comma, which the agent does not read; remove it")
		}
	}
	if !d.comments && !v.IsStandard() {
		return errors.New("the file has comments, which the agent does not read; remove them")
	}
	c := v.Clone() // (Clone loses trailing commas: there are none)
	c.Standardize()
	dec := jsontext.NewDecoder(bytes.NewReader(c.Pack()))
	for {
		_, err := dec.ReadToken()
		if err == io.EOF {
			return nil
		}
		if err == nil {
			continue
		}
		var se *jsontext.SyntacticError
		if errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName) {
			return fmt.Errorf("a name appears twice in one object (at %s): the agent reads one and an edit would change the other; remove one", pointer(se.JSONPointer))
		}
		return fmt.Errorf("malformed JSON: %v", err)
	}
}

func pointer(p jsontext.Pointer) string {
	if p == "" {
		return "the top level"
	}
	return string(p)
}

// trailingComma reports whether v is an object or array with a comma
// after its last member.
func trailingComma(v *hujson.Value) bool {
	switch c := v.Value.(type) {
	case *hujson.Object:
		return len(c.Members) > 0 && c.Members[len(c.Members)-1].Value.AfterExtra != nil
	case *hujson.Array:
		return len(c.Elements) > 0 && c.Elements[len(c.Elements)-1].AfterExtra != nil
	}
	return false
}

// pack renders the document.
func (d *doc) pack() []byte { return d.root.Pack() }

func (d *doc) obj() *hujson.Object { return d.root.Value.(*hujson.Object) }

// indentUnit is the whitespace that starts a text's first indented line
// ("" when the text is on one line; two spaces when no line is indented).
func indentUnit(b []byte) string {
	t := bytes.TrimSpace(b)
	if !bytes.Contains(t, []byte("\n")) {
		return ""
	}
	for _, line := range strings.Split(string(t), "\n")[1:] {
		if ws := line[:len(line)-len(strings.TrimLeft(line, " \t"))]; ws != "" {
			return ws
		}
	}
	return "  "
}

// member returns the value of the member name of o, nil if none.
func member(o *hujson.Object, name string) *hujson.Value {
	if o == nil {
		return nil
	}
	for i := range o.Members {
		if lit, ok := o.Members[i].Name.Value.(hujson.Literal); ok && lit.String() == name {
			return &o.Members[i].Value
		}
	}
	return nil
}

func asObject(v *hujson.Value) *hujson.Object {
	if v == nil {
		return nil
	}
	o, _ := v.Value.(*hujson.Object)
	return o
}

func asArray(v *hujson.Value) *hujson.Array {
	if v == nil {
		return nil
	}
	a, _ := v.Value.(*hujson.Array)
	return a
}

func asString(v *hujson.Value) string {
	if v == nil {
		return ""
	}
	if lit, ok := v.Value.(hujson.Literal); ok && lit.Kind() == '"' {
		return lit.String()
	}
	return ""
}

// layout is how the members of one object or array are laid out.
type layout struct {
	lead  string // the whitespace before each member (a line break and the indent, or "" / " " on one line)
	colon string // the whitespace after a name's colon
	inner string // the indentation of the lines inside a new member's value
	unit  string
	nl    string // the line break
	// spaced: on one line, a space follows each colon and comma
	spaced bool
}

// layoutOf derives how a new member of a container is laid out from its
// members: the first one's line and colon, and on one line the space
// after a comma (before a later member, later; nil when there is none);
// for an empty container, from its parent's layout.
func (d *doc) layoutOf(first, firstValue, later *hujson.Value, parent layout) layout {
	l := layout{unit: d.unit, colon: " ", nl: d.nl, spaced: d.spaced}
	if !d.spaced {
		l.colon = ""
	}
	if first != nil {
		extra := string(first.BeforeExtra)
		if later != nil && !strings.Contains(extra, "\n") {
			extra = string(later.BeforeExtra) // on one line: what follows a comma
		} else if later == nil && !strings.Contains(extra, "\n") && strings.Trim(extra, " \t") == "" {
			extra = l.colon // one member: spaced like the colons
		}
		if i := strings.LastIndexByte(extra, '\n'); i >= 0 {
			ws := extra[i+1:]
			if strings.Trim(ws, " \t") != "" {
				ws = parent.indent() + d.unitOr()
			}
			l.lead = d.nl + ws
		} else if strings.Trim(extra, " \t") == "" {
			l.lead = extra
		} else {
			l.lead = " "
		}
		if firstValue != nil && strings.Trim(string(firstValue.BeforeExtra), " \t") == "" {
			l.colon = string(firstValue.BeforeExtra)
		}
	} else if d.unit != "" {
		l.lead = d.nl + parent.indent() + d.unit
	}
	if l.multiline() {
		l.inner = l.indent()
	}
	return l
}

func (d *doc) unitOr() string {
	if d.unit == "" {
		return "  "
	}
	return d.unit
}

func (l layout) multiline() bool { return strings.Contains(l.lead, "\n") }

// indent is the indentation of the members' lines ("" on one line).
func (l layout) indent() string { return strings.TrimLeft(l.lead, "\r\n") }

// render is v as JSON laid out to sit at l: indented below it, or compact.
func (l layout) render(v any) hujson.Value {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if l.multiline() {
		unit := l.unit
		if unit == "" {
			unit = "  "
		}
		enc.SetIndent(l.inner, unit)
	}
	if err := enc.Encode(v); err != nil {
		panic("install: encode a new member: " + err.Error())
	}
	text := bytes.TrimSpace(buf.Bytes())
	if !l.multiline() && l.spaced {
		v := jsontext.Value(text)
		if err := v.Format(jsontext.SpaceAfterColon(true), jsontext.SpaceAfterComma(true)); err != nil {
			panic("install: space a new member: " + err.Error())
		}
		text = v
	}
	if l.nl == "\r\n" {
		text = bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n"))
	}
	out, err := hujson.Parse(text)
	if err != nil {
		panic("install: parse a new member: " + err.Error())
	}
	return out
}

// closeLead is the whitespace before the closing bracket of a container
// that had no members and now gets its first one.
func (l layout) closeLead(parent layout) string {
	if l.multiline() {
		return l.nl + parent.indent()
	}
	return ""
}

// objLayout is the layout of the members of o (found at the member
// layout parent).
func (d *doc) objLayout(o *hujson.Object, parent layout) layout {
	switch n := len(o.Members); {
	case n > 1:
		return d.layoutOf(&o.Members[0].Name, &o.Members[0].Value, &o.Members[n-1].Name, parent)
	case n == 1:
		return d.layoutOf(&o.Members[0].Name, &o.Members[0].Value, nil, parent)
	}
	return d.layoutOf(nil, nil, nil, parent)
}

func (d *doc) arrLayout(a *hujson.Array, parent layout) layout {
	switch n := len(a.Elements); {
	case n > 1:
		return d.layoutOf(&a.Elements[0], nil, &a.Elements[n-1], parent)
	case n == 1:
		return d.layoutOf(&a.Elements[0], nil, nil, parent)
	}
	return d.layoutOf(nil, nil, nil, parent)
}

// rootLayout is the layout of the members of the top-level object.
func (d *doc) rootLayout() layout {
	return d.objLayout(d.obj(), layout{unit: d.unit, nl: d.nl})
}

// grow readies a container whose last value is last (nil: none) for
// one more: the comma after last is written; it reports whether last had
// a trailing comma, which the new last value then keeps.
func grow(last *hujson.Value) (trailing bool) {
	if last == nil {
		return false
	}
	trailing = last.AfterExtra != nil
	if !trailing {
		last.AfterExtra = []byte{}
	}
	return trailing
}

// opened gives a container that had no values the closing line break of
// its layout (unless it holds a comment).
func opened(empty bool, closing *hujson.Extra, l, parent layout) {
	if empty && len(bytes.TrimSpace(*closing)) == 0 {
		*closing = []byte(l.closeLead(parent))
	}
}

// shrunk settles a container after the removal of a value: when that was
// the last one, without a trailing comma, the new last (nil: none left)
// gives up its comma; a container left empty loses its inner space.
func shrunk(wasLast, trailing bool, newLast *hujson.Value, closing *hujson.Extra) {
	if wasLast && !trailing && newLast != nil {
		*closing = append(append([]byte{}, newLast.AfterExtra...), *closing...)
		newLast.AfterExtra = nil
	}
	if newLast == nil && len(bytes.TrimSpace(*closing)) == 0 {
		*closing = nil
	}
}

func lastMember(o *hujson.Object) *hujson.Value {
	if len(o.Members) == 0 {
		return nil
	}
	return &o.Members[len(o.Members)-1].Value
}

func lastElement(a *hujson.Array) *hujson.Value {
	if len(a.Elements) == 0 {
		return nil
	}
	return &a.Elements[len(a.Elements)-1]
}

// addMember appends name: v to o, laid out as l, and returns the new value.
func addMember(o *hujson.Object, l, parent layout, name string, v any) *hujson.Value {
	empty := len(o.Members) == 0
	val := l.render(v)
	val.BeforeExtra = []byte(l.colon)
	if grow(lastMember(o)) {
		val.AfterExtra = []byte{}
	}
	nm := hujson.Value{BeforeExtra: []byte(l.lead), Value: hujson.String(name)}
	o.Members = append(o.Members, hujson.ObjectMember{Name: nm, Value: val})
	opened(empty, &o.AfterExtra, l, parent)
	return lastMember(o)
}

// addElement appends v to a, laid out as l.
func addElement(a *hujson.Array, l, parent layout, v any) {
	empty := len(a.Elements) == 0
	val := l.render(v)
	val.BeforeExtra = []byte(l.lead)
	if grow(lastElement(a)) {
		val.AfterExtra = []byte{}
	}
	a.Elements = append(a.Elements, val)
	opened(empty, &a.AfterExtra, l, parent)
}

// removeMember removes the member at i of o; the comma before it goes
// with it when it was the last.
func removeMember(o *hujson.Object, i int) {
	wasLast, trailing := i == len(o.Members)-1, o.Members[i].Value.AfterExtra != nil
	o.Members = append(o.Members[:i:i], o.Members[i+1:]...)
	shrunk(wasLast, trailing, lastMember(o), &o.AfterExtra)
}

// removeElement removes the element at i of a, as removeMember does.
func removeElement(a *hujson.Array, i int) {
	wasLast, trailing := i == len(a.Elements)-1, a.Elements[i].AfterExtra != nil
	a.Elements = append(a.Elements[:i:i], a.Elements[i+1:]...)
	shrunk(wasLast, trailing, lastElement(a), &a.AfterExtra)
}

// setLiteral replaces the value of v by the JSON of x, keeping the space
// around it.
func setLiteral(v *hujson.Value, x any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		panic("install: encode a literal: " + err.Error())
	}
	v.Value = hujson.Literal(bytes.TrimSpace(buf.Bytes()))
}
