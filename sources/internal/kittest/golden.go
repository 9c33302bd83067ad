package kittest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

// MapFunc is a source's pure mapping of one input (a journal line, or a
// whole side file) to the events it yields, appended to out, and the code
// it is skipped with.
type MapFunc func(data []byte, out []agentbridge.Event) ([]agentbridge.Event, string)

// ViewFunc is a source's mapping of one journal line that reads the
// session's fold (fold.View) as the events of the lines before left it.
type ViewFunc func(v fold.View, data []byte, out []agentbridge.Event) ([]agentbridge.Event, string)

// Mapper is one session's mapping: Line (or Viewed, for a mapping that
// reads the fold's view) for journal lines and, when the source reads a
// side file, Side for it (nil otherwise).
type Mapper struct {
	Line   MapFunc
	Viewed ViewFunc
	Side   MapFunc
}

// line maps one journal line, handing Viewed the view of s.
func (m Mapper) line(s *fold.Session, data []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
	if m.Viewed != nil {
		return m.Viewed(fold.ViewOf(s), data, out)
	}
	return m.Line(data, out)
}

// Golden is what one session becomes: per journal line (and, last, its
// side file, read as the source reads it once the journal's writes are
// in), the events it maps to or the code it is skipped with, and the
// snapshot the events fold into.
type Golden struct {
	Lines    []GoldenLine          `json:"lines"`
	Side     *GoldenLine           `json:"side,omitempty"`
	Snapshot agentbridge.Snapshot  `json:"snapshot"`
	Activity *agentbridge.Activity `json:"activity,omitempty"`
}

// GoldenLine is one input's result.
type GoldenLine struct {
	Line    int                 `json:"line,omitempty"`
	Skipped string              `json:"skipped,omitempty"`
	Events  []agentbridge.Event `json:"events,omitempty"`
	// Usage lists the token counts the line's events carry (Event.Usage,
	// which is not part of an event's JSON), in order.
	Usage []agentbridge.UsageReport `json:"usage,omitempty"`
}

// goldenLine makes a GoldenLine, moving the events' usage beside them.
func goldenLine(n int, code string, evs []agentbridge.Event) GoldenLine {
	g := GoldenLine{Line: n, Skipped: code}
	for _, e := range evs {
		if e.Usage != nil {
			g.Usage = append(g.Usage, *e.Usage)
			e.Usage = nil
		}
		g.Events = append(g.Events, e)
	}
	return g
}

// Replay maps a journal line by line, then its side file when side is not
// nil, and folds every event into a session of harness, failing the test
// on an event the validator or the fold refuses: a mapping must only say
// what the fold accepts.
func Replay(t testing.TB, m Mapper, id, harness string, journal, side []byte) Golden {
	t.Helper()
	var g Golden
	s := fold.NewSession(id, harness)
	apply := func(where []byte, evs []agentbridge.Event, code string) {
		t.Helper()
		switch code {
		case "", sources.CodeInvalidJSON, sources.CodeInvalidRecord:
		default:
			t.Fatalf("unknown code %q", code)
		}
		for _, e := range evs {
			if issues := validate.Event(e); len(issues) > 0 {
				t.Fatalf("invalid %s from %q: %+v", e.Kind, where, issues)
			}
			if issues := s.Apply(e); len(issues) > 0 {
				t.Fatalf("fold refused %s from %q: %+v", e.Kind, where, issues)
			}
		}
	}
	for i, line := range bytes.Split(bytes.TrimRight(journal, "\n"), []byte("\n")) {
		evs, code := m.line(s, line, nil)
		apply(line, evs, code)
		if code != "" || len(evs) > 0 {
			g.Lines = append(g.Lines, goldenLine(i+1, code, evs))
		}
	}
	if side != nil && m.Side != nil {
		evs, code := m.Side(side, nil)
		apply(side, evs, code)
		l := goldenLine(0, code, evs)
		g.Side = &l
	}
	g.Snapshot = s.Snapshot()
	g.Activity = s.Activity()
	if issues := validate.Snapshot(g.Snapshot, validate.Harnesses{harness: true}); len(issues) > 0 {
		t.Fatalf("final snapshot invalid: %+v", issues)
	}
	return g
}

// GoldenDir replays every dir/<name>.jsonl (with its side file, the name
// sideName returns, when there is one) through a fresh Mapper and compares
// the result with testdata/golden/<name>.json; update rewrites those.
func GoldenDir(t *testing.T, dir, harness string, sideName func(journal string) string, newMapper func(id string) Mapper, update bool) {
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no journals in %s: %v", dir, err)
	}
	for _, name := range names {
		base := strings.TrimSuffix(filepath.Base(name), ".jsonl")
		t.Run(base, func(t *testing.T) {
			journal, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			var side []byte
			if sideName != nil {
				side, err = os.ReadFile(sideName(name))
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
			}
			id := "s-" + base
			got := Replay(t, newMapper(id), id, harness, journal, side)
			sourcestest.Golden(t, filepath.Join("testdata", "golden", base+".json"), got, update)
		})
	}
}

// BenchLines measures a mapping over every journal in dir, line by line
// with a fresh session per journal (as a scan at start reads them), in
// bytes per second and allocations per line.
func BenchLines(b *testing.B, dir string, newMapper func(id string) Mapper) {
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(names) == 0 {
		b.Fatalf("no journals in %s: %v", dir, err)
	}
	var journals [][][]byte
	var size int64
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			b.Fatal(err)
		}
		size += int64(len(data))
		journals = append(journals, bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	var out []agentbridge.Event
	for b.Loop() {
		for _, lines := range journals {
			m := newMapper("bench")
			s := fold.NewSession("bench", "bench")
			for _, l := range lines {
				out, _ = m.line(s, l, out[:0])
				if m.Viewed != nil {
					for _, e := range out {
						s.Apply(e)
					}
				}
			}
		}
	}
}

// CheckUsage replays dir/<name>.jsonl (with its side file, the name
// sideName returns, when there is one) for each name of want and compares
// the session's token usage with want (nil: none recorded): the journals'
// own counts, which the caller works out independently of the mapping.
func CheckUsage(t *testing.T, dir, harness string, sideName func(journal string) string, newMapper func(id string) Mapper, want map[string]*agentbridge.Usage) {
	t.Helper()
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".jsonl")
			journal, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var side []byte
			if sideName != nil {
				if side, err = os.ReadFile(sideName(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
			}
			id := "s-" + name
			g := Replay(t, newMapper(id), id, harness, journal, side)
			var got *agentbridge.Usage
			if g.Activity != nil {
				got = g.Activity.Usage
			}
			switch {
			case (got == nil) != (w == nil):
				t.Errorf("usage = %+v, want %+v", got, w)
			case got != nil && *got != *w:
				t.Errorf("usage = %+v, want the journal's own %+v", *got, *w)
			}
		})
	}
}
