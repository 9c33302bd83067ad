package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	yamlv3 "go.yaml.in/yaml/v3"
)

// origin is where the value of one setting came from, as the user wrote
// it: the layer, the name in that layer (a flag, a variable, a YAML key)
// and the value.
type origin struct {
	layer string // layerFlag, layerEnv or layerFile
	name  string // "--window", "AGENTBRIDGE_WINDOW" or the YAML key ("window")
	file  string // the YAML file (layerFile)
	line  int    // 1-based line of the key in file (layerFile)
	value string // the value as written; "" for a mapping or a list
}

// The layers a setting can come from.
const (
	layerFlag = "flag"
	layerEnv  = "environment variable"
	layerFile = "config file"
)

// where names the origin: "flag --window", "environment variable
// AGENTBRIDGE_WINDOW", "config file /p/config.yaml line 3: window".
func (o origin) where() string {
	switch o.layer {
	case layerFile:
		return fmt.Sprintf("config file %s line %d: %s", o.file, o.line, o.name)
	default:
		return o.layer + " " + o.name
	}
}

// origins maps setting paths ("window", "sources.codex.home",
// "push[0].id") to where their value came from; a later layer replaces an
// earlier one, as the values do.
type origins map[string]origin

// setFlag records a flag the user set, for key.
func (og origins) setFlag(key string, f *pflag.Flag) {
	og[key] = origin{layer: layerFlag, name: "--" + f.Name, value: f.Value.String()}
}

// setEnv records an environment variable, for key.
func (og origins) setEnv(key, name, value string) {
	og[key] = origin{layer: layerEnv, name: name, value: value}
}

// addFile records the line of every key of the YAML file at path, whose
// content is b, with the paths mapstructure reports ("a.b", "list[0].c").
// A file that does not parse adds nothing: its loading reports the syntax
// error.
func (og origins) addFile(path string, b []byte) {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return
	}
	var walk func(prefix string, n *yamlv3.Node)
	walk = func(prefix string, n *yamlv3.Node) {
		switch n.Kind {
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if prefix != "" {
					p = prefix + "." + k.Value
				}
				o := origin{layer: layerFile, name: p, file: path, line: k.Line}
				if v.Kind == yamlv3.ScalarNode {
					o.value = v.Value
				}
				og[p] = o
				walk(p, v)
			}
		case yamlv3.SequenceNode:
			for i, item := range n.Content {
				p := prefix + "[" + strconv.Itoa(i) + "]"
				og[p] = origin{layer: layerFile, name: p, file: path, line: item.Line, value: item.Value}
				walk(p, item)
			}
		}
	}
	walk("", doc.Content[0])
}

// lookup finds the origin of path or of the nearest setting that holds it
// ("push[0].harnesses[1].id", else "push[0].harnesses[1]", ... "push").
func (og origins) lookup(path string) (origin, bool) {
	for path != "" {
		if o, ok := og[path]; ok {
			return o, true
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return origin{}, false
}

// explain writes msg about the setting at path with its origin, e.g.
// `environment variable AGENTBRIDGE_WINDOW: "banana" is not a duration`.
// The token's value is never shown.
func (og origins) explain(path, msg string) string {
	o, ok := og.lookup(path)
	if !ok {
		return path + ": " + msg
	}
	if o.layer == layerFile {
		o.name = path // the key in full, even when the file lacks it
	}
	return o.where() + ": " + msg
}

// value is the value of path as the user wrote it, quoted; "" when it is
// unknown, or secret.
func (og origins) value(path string) string {
	o, ok := og.lookup(path)
	if !ok || o.value == "" || strings.EqualFold(lastSegment(path), "token") {
		return ""
	}
	return strconv.Quote(o.value)
}

func lastSegment(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[i+1:]
	}
	return path
}

// decodeLine is one line of a mapstructure error: 'path' message.
var decodeLine = regexp.MustCompile(`^'([^']*)' (.*)$`)

// mapIndex is mapstructure's map key in a path: sources[codex].
var mapIndex = regexp.MustCompile(`\[([^\]0-9][^\]]*)\]`)

// decodeError rewrites the decoder's error, one problem a line, each
// naming where the bad value came from, the key as written there and the
// value.
func (og origins) decodeError(err error) error {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "decoding failed due to") {
			continue
		}
		m := decodeLine.FindStringSubmatch(l)
		if m == nil {
			if keys, ok := strings.CutPrefix(l, "'' has invalid keys: "); ok {
				for _, k := range strings.Split(keys, ", ") {
					out = append(out, og.explain(k, "unknown key"))
				}
				continue
			}
			out = append(out, l)
			continue
		}
		path := mapIndex.ReplaceAllString(m[1], ".$1")
		msg := m[2]
		if keys, ok := strings.CutPrefix(msg, "has an unknown key: "); ok {
			for _, k := range strings.Split(keys, ", ") {
				out = append(out, og.explain(joinPath(path, k), "unknown key"))
			}
			continue
		}
		if keys, ok := strings.CutPrefix(msg, "has invalid keys: "); ok {
			for _, k := range strings.Split(keys, ", ") {
				out = append(out, og.explain(joinPath(path, k), "unknown key"))
			}
			continue
		}
		out = append(out, og.explain(path, og.friendly(path, msg)))
	}
	if len(out) == 0 {
		return err
	}
	return errors.New(strings.Join(out, "\n"))
}

func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// friendly turns a decoder message into one that shows the value.
func (og origins) friendly(path, msg string) string {
	v := og.value(path)
	if v == "" {
		v = "the value"
	}
	switch {
	case strings.Contains(msg, "time: invalid duration"), strings.Contains(msg, "time: missing unit"), strings.Contains(msg, "time: unknown unit"):
		return v + " is not a duration; give a unit, e.g. 90s, 10m or 2h"
	case strings.Contains(msg, "ParseBool"):
		return v + " is not true or false"
	case strings.Contains(msg, "ParseInt"), strings.Contains(msg, "ParseUint"), strings.Contains(msg, "ParseFloat"):
		return v + " is not a number"
	case strings.HasPrefix(msg, "expected a map or struct"):
		return v + " is not a mapping of keys to values"
	case strings.HasPrefix(msg, "source data must be an array or slice"):
		return v + " is not a list"
	}
	return msg
}

// validateError rewrites the errors of Validate ("key: message", joined)
// so that each names where its value came from.
func (og origins) validateError(err error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		key, msg, ok := strings.Cut(e.Error(), ": ")
		if !ok || strings.ContainsAny(key, " \"") {
			out = append(out, e.Error())
			continue
		}
		if _, known := og.lookup(key); !known {
			out = append(out, e.Error())
			continue
		}
		out = append(out, og.explain(key, msg))
	}
	return errors.New(strings.Join(out, "\n"))
}
