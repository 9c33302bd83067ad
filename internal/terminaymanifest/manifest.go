// Package terminaymanifest generates the harness list of the Terminay
// extension's manifest (extensions/terminay/package.json) from the source
// registry. Only the two arrays the registry decides are rewritten, in
// place; every other byte of the file is kept.
package terminaymanifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/google/renameio/v2/maybe"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
)

// ExtensionVariables are the environment variables the extension itself
// reads (src/bridge.js: the bridge's address and token, the token file's
// directory, os.homedir's fallback); they are declared after the
// sources' own. The extension's node test (test/manifest.test.js) checks
// each variable its code reads is declared.
var ExtensionVariables = []string{"AGENTBRIDGE_ADDR", "AGENTBRIDGE_TOKEN", "XDG_STATE_HOME", "HOME"}

// The generated arrays: keys under terminay.contributes.agentSessionSources[0].
const (
	harnessesKey = "harnesses"
	variablesKey = "environmentVariables"
)

// Lists returns what the manifest declares for regs: every harness in
// registry order (sources by id, harnesses as each source lists them),
// and every variable a source reads followed by ExtensionVariables, each
// once.
func Lists(regs []sources.Registration) ([]agentbridge.Harness, []string) {
	harnesses := []agentbridge.Harness{}
	vars := []string{}
	add := func(v string) {
		if !slices.Contains(vars, v) {
			vars = append(vars, v)
		}
	}
	for _, r := range regs {
		for _, h := range r.Info.Harnesses {
			harnesses = append(harnesses, agentbridge.Harness{ID: h.ID, DisplayName: h.DisplayName})
		}
		for _, v := range r.Info.EnvironmentVariables {
			add(v)
		}
	}
	for _, v := range ExtensionVariables {
		add(v)
	}
	return harnesses, vars
}

// Rewrite returns doc, a package.json, with the harnesses and
// environmentVariables arrays of terminay.contributes.agentSessionSources[0]
// replaced by what regs declare, indented like the file. Everything
// outside the two arrays is returned unchanged, byte for byte.
func Rewrite(doc []byte, regs []sources.Registration) ([]byte, error) {
	spans, err := arraySpans(doc)
	if err != nil {
		return nil, err
	}
	harnesses, vars := Lists(regs)
	values := map[string]any{harnessesKey: harnesses, variablesKey: vars}
	// Replace the later span first so the earlier one's offsets hold.
	keys := []string{harnessesKey, variablesKey}
	slices.SortFunc(keys, func(a, b string) int { return spans[b].start - spans[a].start })
	out := slices.Clone(doc)
	for _, k := range keys {
		s := spans[k]
		text, err := encode(values[k], lineIndent(doc, s.start), indentUnit(doc))
		if err != nil {
			return nil, fmt.Errorf("manifest: encode %s: %w", k, err)
		}
		out = slices.Concat(out[:s.start], text, out[s.end:])
	}
	return out, nil
}

// WriteFile rewrites the manifest at path (Rewrite), atomically where the
// platform allows (renameio's maybe: not on Windows), keeping
// its mode; it reports whether the file changed.
func WriteFile(path string, regs []sources.Registration) (bool, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("manifest: %w", err)
	}
	out, err := Rewrite(doc, regs)
	if err != nil {
		return false, err
	}
	if bytes.Equal(out, doc) {
		return false, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false, fmt.Errorf("manifest: %w", err)
	}
	if err := maybe.WriteFile(path, out, fi.Mode().Perm()); err != nil {
		return false, fmt.Errorf("manifest: write: %w", err)
	}
	return true, nil
}

// encode writes v as indented JSON whose lines after the first start
// with prefix, as the file's own indentation would have it.
func encode(v any, prefix, unit string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, unit)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// lineIndent is the leading white space of the line holding offset.
func lineIndent(doc []byte, offset int) string {
	start := bytes.LastIndexByte(doc[:offset], '\n') + 1
	end := start
	for end < len(doc) && (doc[end] == ' ' || doc[end] == '\t') {
		end++
	}
	return string(doc[start:end])
}

// indentUnit is the file's indentation step: the leading white space of
// its first indented line; two spaces when no line is indented.
func indentUnit(doc []byte) string {
	for line := range bytes.Lines(doc) {
		if ind := lineIndent(line, 0); ind != "" && len(bytes.TrimSpace(line)) > 0 {
			return ind
		}
	}
	return "  "
}

type span struct{ start, end int }

// arraySpans finds the byte spans of the two generated arrays (from '['
// to past ']') by walking doc's tokens.
func arraySpans(doc []byte) (map[string]span, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	w := walker{doc: doc, dec: dec, spans: map[string]span{}}
	if err := w.value(nil); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("manifest: data after the document")
	}
	for _, k := range []string{harnessesKey, variablesKey} {
		s, ok := w.spans[k]
		if !ok {
			return nil, fmt.Errorf("manifest: no terminay.contributes.agentSessionSources[0].%s array", k)
		}
		if k == harnessesKey {
			continue
		}
		if h := w.spans[harnessesKey]; s.start < h.end && h.start < s.end {
			return nil, errors.New("manifest: the generated arrays overlap")
		}
	}
	return w.spans, nil
}

// walker descends a JSON document token by token, keeping the path to
// the current value.
type walker struct {
	doc   []byte
	dec   *json.Decoder
	spans map[string]span
}

// target is the path of the object holding the generated arrays.
var target = []any{"terminay", "contributes", "agentSessionSources", 0}

// value reads one value at path.
func (w *walker) value(path []any) error {
	// The value starts at the first byte past the previous token that is
	// not white space or a separator.
	start := int(w.dec.InputOffset())
	for start < len(w.doc) && bytes.IndexByte([]byte(" \t\r\n:,"), w.doc[start]) >= 0 {
		start++
	}
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		for w.dec.More() {
			k, err := w.dec.Token()
			if err != nil {
				return err
			}
			if err := w.value(append(slices.Clip(path), k)); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; w.dec.More(); i++ {
			if err := w.value(append(slices.Clip(path), i)); err != nil {
				return err
			}
		}
	}
	if _, err := w.dec.Token(); err != nil { // the closing delimiter
		return err
	}
	if d == '[' && len(path) == len(target)+1 && slices.Equal(path[:len(target)], target) {
		if k, _ := path[len(target)].(string); k == harnessesKey || k == variablesKey {
			w.spans[k] = span{start, int(w.dec.InputOffset())}
		}
	}
	return nil
}
