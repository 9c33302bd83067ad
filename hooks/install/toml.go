package install

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Codex's config.toml is edited as text, so that its comments and layout
// stay, at places a TOML parser finds (go-toml's, which knows a quoted
// header from a string that holds one): install turns the hooks feature on
// in the [features] table and marks each line it adds; uninstall removes
// the marked lines and restores what it turned off. The file is read by a
// full TOML decoder before (a file Codex would not load, with a key or
// table twice, is refused) and after the edit, and the edit is written
// only when the result decodes to the same settings with just the feature
// changed.

// tomlTag ends every line install adds to config.toml.
const tomlTag = "# added by agentbridge hooks install"

// tomlWas starts a line install turned off (hooks = false), kept as a
// comment so that uninstall restores it.
const tomlWas = "# turned off by agentbridge hooks install: "

// featureKeys are the names Codex reads the hooks feature by (codex_hooks
// before 0.160).
var featureKeys = []string{"hooks", "codex_hooks"}

// ErrTOMLForm: config.toml spells its features in a form this edit does
// not touch (an inline table, dotted keys): set the flag by hand.
var ErrTOMLForm = errors.New(`config.toml sets "features" as an inline table or dotted keys; add "hooks = true" under [features] yourself`)

// errTOMLEdit: the edited text did not decode to what was meant.
var errTOMLEdit = errors.New(`config.toml could not be edited safely; add "hooks = true" under [features] yourself`)

// decodeTOML decodes a config.toml text (after a UTF-8 byte order mark),
// refusing one Codex would not load.
func decodeTOML(s string) (body string, bom bool, m map[string]any, err error) {
	rest, bom, err := checkBOM([]byte(s), true)
	if err != nil {
		return "", false, nil, err
	}
	m = map[string]any{}
	if err := toml.Unmarshal(rest, &m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return "", false, nil, fmt.Errorf("config.toml is not valid TOML (line %d, column %d: %s): Codex does not load it either; fix it first", row, col, de.Error())
		}
		return "", false, nil, fmt.Errorf("config.toml is not valid TOML (%v): Codex does not load it either; fix it first", err)
	}
	return string(rest), bom, m, nil
}

// features returns the [features] table of a decoded config (nil for
// none) and the flag: true, false, or nil when unset.
func features(m map[string]any) (map[string]any, []any, error) {
	f, ok := m["features"]
	if !ok {
		return nil, nil, nil
	}
	t, ok := f.(map[string]any)
	if !ok {
		return nil, nil, errors.New(`config.toml: "features" is not a table`)
	}
	var flags []any
	for _, k := range featureKeys {
		if v, ok := t[k]; ok {
			if _, isBool := v.(bool); !isBool {
				return nil, nil, fmt.Errorf("config.toml: features.%s is not true or false; Codex does not load it", k)
			}
			flags = append(flags, v)
		}
	}
	return t, flags, nil
}

// tomlScan is what the parser finds in a config.toml text.
type tomlScan struct {
	header int   // the offset just after the [features] header's line, -1 for none
	off    []int // the offsets of the lines that set a feature key false
	offEnd int   // the offset just after the last of those lines
	inline bool  // features is set by a top-level key (inline table or dotted key)
	tagged []int // the offsets of lines with an expression install added
	was    []int // the offsets of the comment lines install turned off
}

func lineStart(s string, at int) int { return strings.LastIndexByte(s[:at], '\n') + 1 }

func lineEnd(s string, at int) int {
	if i := strings.IndexByte(s[at:], '\n'); i >= 0 {
		return at + i + 1
	}
	return len(s)
}

func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

func scanTOML(s string) (tomlScan, error) {
	sc := tomlScan{header: -1}
	p := unstable.Parser{KeepComments: true}
	p.Reset([]byte(s))
	var table []string
	ourTable := -1 // the index in tagged of a header install added, while in its table
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Comment:
			if c := string(e.Data); strings.HasPrefix(c, tomlWas) {
				sc.was = append(sc.was, int(e.Raw.Offset))
			}
		case unstable.Table, unstable.ArrayTable:
			table = keyParts(e.Key())
			first := e.Child()
			at := lineStart(s, int(first.Raw.Offset))
			if e.Kind == unstable.Table && len(table) == 1 && table[0] == "features" {
				sc.header = lineEnd(s, int(first.Raw.Offset))
			}
			ourTable = -1
			if taggedLine(s, at) {
				ourTable = len(sc.tagged)
				sc.tagged = append(sc.tagged, at)
			}
		case unstable.KeyValue:
			key := keyParts(e.Key())
			full := append(append([]string{}, table...), key...)
			if len(table) == 0 && key[0] == "features" {
				sc.inline = true
			}
			at := lineStart(s, int(e.Raw.Offset))
			if len(full) == 2 && full[0] == "features" && len(table) == 1 && slices.Contains(featureKeys, full[1]) {
				if v := e.Value(); v.Kind == unstable.Bool && string(v.Data) == "false" {
					sc.off = append(sc.off, at)
					sc.offEnd = lineEnd(s, int(e.Raw.Offset+e.Raw.Length))
				}
			}
			if taggedLine(s, at) {
				sc.tagged = append(sc.tagged, at)
			} else if ourTable >= 0 {
				sc.tagged[ourTable] = -1 // the user's key is under it: the header stays
			}
		}
	}
	if err := p.Error(); err != nil {
		return sc, fmt.Errorf("config.toml is not valid TOML: %w", err)
	}
	return sc, nil
}

// taggedLine reports whether the line at offset at ends with the tag.
func taggedLine(s string, at int) bool {
	return strings.HasSuffix(strings.TrimRight(s[at:lineEnd(s, at)], "\r\n"), " "+tomlTag)
}

// isFeatureKey reports whether the line at offset at sets a feature key
// (in any spelling TOML allows: quoted, with escapes) to a boolean: a
// line install turned off, to be restored.
func isFeatureKey(s string, at int) bool {
	m := map[string]any{}
	if err := toml.Unmarshal([]byte(s[at:lineEnd(s, at)]), &m); err != nil || len(m) != 1 {
		return false
	}
	for _, k := range featureKeys {
		if _, ok := m[k].(bool); ok {
			return true
		}
	}
	return false
}

// enableFeature turns [features] hooks on, changing nothing when it is on.
func enableFeature(s string) (string, error) {
	body, bom, m, err := decodeTOML(s)
	if err != nil {
		return "", err
	}
	_, flags, err := features(m)
	if err != nil {
		return "", err
	}
	for _, f := range flags {
		if f == true {
			return s, nil // on already (the user's own, or ours)
		}
	}
	nl := "\n"
	if strings.Contains(body, "\r\n") {
		nl = "\r\n"
	}
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += nl // lines are added after others: every one ends
	}
	sc, err := scanTOML(body)
	if err != nil {
		return "", err
	}
	if sc.inline {
		return "", ErrTOMLForm
	}
	add := "hooks = true " + tomlTag + nl
	var out string
	if sc.header < 0 {
		out = body + "[features] " + tomlTag + nl + add
	} else {
		at := sc.header
		if len(sc.off) > 0 {
			at = sc.offEnd
		}
		var b strings.Builder
		prev := 0
		for _, o := range sc.off {
			b.WriteString(body[prev:o])
			b.WriteString(tomlWas)
			prev = o
		}
		b.WriteString(body[prev:at])
		b.WriteString(add)
		b.WriteString(body[at:])
		out = b.String()
	}
	// the edit must decode to the same settings with the feature on
	want, f := withoutFeatureKeys(m)
	if f == nil {
		f = map[string]any{}
	}
	f["hooks"] = true
	want["features"] = f
	if err := checkTOML(out, want); err != nil {
		return "", err
	}
	if bom {
		out = string(utf8BOM) + out
	}
	return out, nil
}

// withoutFeatureKeys returns a copy of the settings m whose [features]
// table, when m has one, is a copy without the feature keys; f is that
// copy (nil when m has no such table).
func withoutFeatureKeys(m map[string]any) (c, f map[string]any) {
	c = maps.Clone(m)
	f, ok := c["features"].(map[string]any)
	if !ok {
		return c, nil
	}
	f = maps.Clone(f)
	for _, k := range featureKeys {
		delete(f, k)
	}
	c["features"] = f
	return c, f
}

// checkTOML decodes an edited text and compares it with want.
func checkTOML(s string, want map[string]any) error {
	got := map[string]any{}
	if err := toml.Unmarshal([]byte(s), &got); err != nil || !reflect.DeepEqual(got, want) {
		return errTOMLEdit
	}
	return nil
}

// disableFeature removes what enableFeature added.
func disableFeature(s string) (string, error) {
	body, bom, m, err := decodeTOML(s)
	if err != nil {
		return "", err
	}
	sc, err := scanTOML(body)
	if err != nil {
		return "", err
	}
	if len(sc.tagged) == 0 && len(sc.was) == 0 {
		return s, nil
	}
	drop := map[int]bool{}
	for _, at := range sc.tagged {
		drop[at] = true
	}
	restore := map[int]bool{}
	for _, at := range sc.was {
		if isFeatureKey(body, at+len(tomlWas)) {
			restore[at] = true
		}
	}
	var b strings.Builder
	for at := 0; at < len(body); {
		end := lineEnd(body, at)
		switch {
		case drop[at]:
		case restore[at]:
			b.WriteString(body[at+len(tomlWas) : end])
		default:
			b.WriteString(body[at:end])
		}
		at = end
	}
	out := b.String()
	// everything but the feature must decode as it was
	got := map[string]any{}
	if err := toml.Unmarshal([]byte(out), &got); err != nil {
		return "", errTOMLEdit
	}
	strip := func(m map[string]any) map[string]any {
		m, _ = withoutFeatureKeys(m)
		if f, ok := m["features"].(map[string]any); ok && len(f) == 0 {
			delete(m, "features")
		}
		return m
	}
	if !reflect.DeepEqual(strip(got), strip(m)) {
		return "", errTOMLEdit
	}
	if bom {
		out = string(utf8BOM) + out
	}
	return out, nil
}

// featureState says whether Codex runs hooks, as the file says.
func featureState(s string) string {
	_, _, m, err := decodeTOML(s)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	_, flags, err := features(m)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	if len(flags) == 0 {
		return "on (default)"
	}
	for _, f := range flags {
		if f == true {
			return "on"
		}
	}
	return "off"
}
