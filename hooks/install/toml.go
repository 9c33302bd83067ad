package install

import (
	"errors"
	"regexp"
	"strings"
)

// Codex's config.toml is edited line by line, so that its comments and
// layout stay: install turns the hooks feature on in the [features] table
// and marks each line it adds; uninstall removes the marked lines and
// restores what it turned off.

// tomlTag ends every line install adds to config.toml.
const tomlTag = "# added by agentbridge hooks install"

// tomlWas starts a line install turned off (hooks = false), kept as a
// comment so that uninstall restores it.
const tomlWas = "# turned off by agentbridge hooks install: "

var (
	tableHeader    = regexp.MustCompile(`^\s*\[`)
	featuresHeader = regexp.MustCompile(`^\s*\[\s*features\s*\]\s*(#.*)?$`)
	featureLine    = regexp.MustCompile(`^\s*(hooks|codex_hooks|"hooks"|"codex_hooks")\s*=\s*([^#\s]+)`)
	featuresInline = regexp.MustCompile(`^\s*features\s*(=|\.)`)
)

// ErrTOMLForm: config.toml spells its features in a form this edit does
// not touch (an inline table, dotted keys): set the flag by hand.
var ErrTOMLForm = errors.New(`config.toml sets "features" as an inline table or dotted keys; add "hooks = true" under [features] yourself`)

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitAfter(s, "\n")
}

// featuresTable returns the index of the [features] header and the end
// of its table (the next header or the end), or -1.
func featuresTable(ls []string) (head, end int, err error) {
	head = -1
	for i, l := range ls {
		if head < 0 && !tableHeader.MatchString(l) && featuresInline.MatchString(l) {
			return -1, 0, ErrTOMLForm
		}
		if tableHeader.MatchString(l) {
			if head >= 0 {
				return head, i, nil
			}
			if featuresHeader.MatchString(strings.TrimRight(l, "\r\n")) {
				head = i
			}
		}
	}
	return head, len(ls), nil
}

// enableFeature turns [features] hooks on, changing nothing when it is on.
func enableFeature(s string) (string, error) {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n" // lines are added after others: every one ends
	}
	ls := lines(s)
	head, end, err := featuresTable(ls)
	if err != nil {
		return "", err
	}
	add := "hooks = true " + tomlTag + "\n"
	if head < 0 {
		return s + "[features] " + tomlTag + "\n" + add, nil
	}
	var off []int
	for i := head + 1; i < end; i++ {
		m := featureLine.FindStringSubmatch(ls[i])
		if m == nil {
			continue
		}
		if m[2] == "true" {
			return s, nil // on already (the user's own, or ours)
		}
		off = append(off, i)
	}
	for _, i := range off {
		ls[i] = tomlWas + ls[i]
	}
	at := head + 1
	if len(off) > 0 {
		at = off[len(off)-1] + 1
	}
	ls = append(ls[:at], append([]string{add}, ls[at:]...)...)
	return strings.Join(ls, ""), nil
}

// disableFeature removes what enableFeature added.
func disableFeature(s string) string {
	var out []string
	for _, l := range lines(s) {
		body := strings.TrimRight(l, "\r\n")
		switch {
		case strings.HasSuffix(body, " "+tomlTag):
			continue
		case strings.HasPrefix(body, tomlWas):
			l = strings.TrimPrefix(l, tomlWas)
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}

// featureState says whether Codex runs hooks, as the file says.
func featureState(s string) string {
	ls := lines(s)
	head, end, err := featuresTable(ls)
	if err != nil {
		return "unknown (set in an inline table)"
	}
	if head < 0 {
		return "on (default)"
	}
	state := "on (default)"
	for i := head + 1; i < end; i++ {
		if m := featureLine.FindStringSubmatch(ls[i]); m != nil {
			if m[2] == "true" {
				return "on"
			}
			state = "off"
		}
	}
	return state
}
