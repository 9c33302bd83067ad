package sourcestest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/validate"
)

// SkipCodes are the codes a mapping may skip a line with:
// sources.CodeInvalidJSON and sources.CodeInvalidRecord, spelled out here
// because package sources' own tests import this package (TestSkipCodes
// keeps the two in step).
var SkipCodes = map[string]bool{"invalid-json": true, "invalid-record": true}

// MapFunc is a source's pure mapping of one input (a journal line, or a
// whole side file) to the events it yields, appended to out, and the code
// it is skipped with.
type MapFunc func(data []byte, out []agentbridge.Event) ([]agentbridge.Event, string)

// ViewFunc is a source's mapping of one journal line that reads the
// session's fold (fold.View) as the events of the lines before left it.
type ViewFunc func(v fold.View, data []byte, out []agentbridge.Event) ([]agentbridge.Event, string)

// Mapper is one session's mapping: Line (or Viewed, for a mapping that
// reads the fold's view) for journal lines and, when the source reads a
// side file, Side for it (nil otherwise); End, when not nil, is what the
// mapping says once the journal is read (as a source's first read ends).
// Rebuilt, when not nil, says after each line whether the mapping threw
// the session away and rebuilt it (an agent that rewrites its journal
// whole): the line's events are then folded into a new session.
type Mapper struct {
	Line    MapFunc
	Viewed  ViewFunc
	Side    MapFunc
	End     func(out []agentbridge.Event) []agentbridge.Event
	Rebuilt func() bool
}

// line maps one journal line, handing Viewed the view of s.
func (m Mapper) line(s *fold.Session, data []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
	if m.Viewed != nil {
		return m.Viewed(fold.ViewOf(s), data, out)
	}
	return m.Line(data, out)
}

// LineGolden is what one session becomes: per journal line (then its
// side file, read as the source reads it once the journal's writes are
// in, and the mapping's end, Mapper.End), the events it maps to or the
// code it is skipped with, and the snapshot and activity the events fold
// into.
type LineGolden struct {
	Lines    []GoldenLine          `json:"lines"`
	Side     *GoldenLine           `json:"side,omitempty"`
	End      *GoldenLine           `json:"end,omitempty"`
	Snapshot agentbridge.Snapshot  `json:"snapshot"`
	Activity *agentbridge.Activity `json:"activity,omitempty"`
}

// GoldenLine is one input's result.
type GoldenLine struct {
	Line int `json:"line,omitempty"`
	// Session is the session the events are for, in a FilesGolden.
	Session string `json:"session,omitempty"`
	Skipped string `json:"skipped,omitempty"`
	// Rebuild says the line's events rebuild the session from nothing
	// (Mapper.Rebuilt).
	Rebuild bool                `json:"rebuild,omitempty"`
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

// MapLines maps a journal line by line, then its side file when side is not
// nil, and folds every event into a session of harness, failing the test
// on an event the validator or the fold refuses: a mapping must only say
// what the fold accepts.
func MapLines(t testing.TB, m Mapper, id, harness string, journal, side []byte) LineGolden {
	t.Helper()
	g, _ := MapSession(t, m, id, harness, journal, side)
	return g
}

// MapSession is MapLines that also returns the session the events were
// folded into (for what a user is shown: ShownStatus, Session.Ended).
func MapSession(t testing.TB, m Mapper, id, harness string, journal, side []byte) (LineGolden, *fold.Session) {
	t.Helper()
	var g LineGolden
	s := fold.NewSession(id, harness)
	apply := func(where []byte, evs []agentbridge.Event, code string) {
		t.Helper()
		if code != "" && !SkipCodes[code] {
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
		rebuilt := m.Rebuilt != nil && m.Rebuilt()
		if rebuilt {
			s = fold.NewSession(id, harness)
		}
		apply(line, evs, code)
		if code != "" || len(evs) > 0 || rebuilt {
			l := goldenLine(i+1, code, evs)
			l.Rebuild = rebuilt
			g.Lines = append(g.Lines, l)
		}
	}
	if side != nil && m.Side != nil {
		evs, code := m.Side(side, nil)
		apply(side, evs, code)
		l := goldenLine(0, code, evs)
		g.Side = &l
	}
	if m.End != nil {
		evs := m.End(nil)
		apply(nil, evs, "")
		if len(evs) > 0 {
			l := goldenLine(0, "", evs)
			g.End = &l
		}
	}
	g.Snapshot = s.Snapshot()
	g.Activity = s.Activity()
	if issues := validate.Snapshot(g.Snapshot, validate.Harnesses{harness: true}); len(issues) > 0 {
		t.Fatalf("final snapshot invalid: %+v", issues)
	}
	return g, s
}

// AllEvents returns the events of every line, then of the side file and
// the end, in order (without their usage, which the lines list beside
// them).
func (g LineGolden) AllEvents() []agentbridge.Event {
	var out []agentbridge.Event
	for _, l := range g.Lines {
		out = append(out, l.Events...)
	}
	for _, l := range []*GoldenLine{g.Side, g.End} {
		if l != nil {
			out = append(out, l.Events...)
		}
	}
	return out
}

// GoldenDir replays every dir/<name>.jsonl (with its side file, the name
// sideName returns, when there is one) as session s-<name> through a fresh
// Mapper and compares the result with testdata/golden/<name>.json; update
// rewrites those. It is GoldenFS over dir.
func GoldenDir(t *testing.T, dir, harness string, sideName func(journal string) string, newMapper func(id string) Mapper, update bool) {
	t.Helper()
	GoldenFS(t, os.DirFS(dir), harness, func(name string) string { return "s-" + name }, sideName, newMapper, update)
}

// GoldenFS replays every <name>.jsonl at the top of fsys (with its side
// file, the name sideName returns, when there is one) as session
// id(<name>) through a fresh Mapper and compares the result with
// testdata/golden/<name>.json; update rewrites those.
func GoldenFS(t *testing.T, fsys fs.FS, harness string, id func(name string) string, sideName func(journal string) string, newMapper func(id string) Mapper, update bool) {
	t.Helper()
	names, err := fs.Glob(fsys, "*.jsonl")
	if err != nil || len(names) == 0 {
		t.Fatalf("no journals: %v", err)
	}
	for _, name := range names {
		base := strings.TrimSuffix(name, ".jsonl")
		t.Run(base, func(t *testing.T) {
			journal, err := fs.ReadFile(fsys, name)
			if err != nil {
				t.Fatal(err)
			}
			var side []byte
			if sideName != nil {
				side, err = fs.ReadFile(fsys, sideName(name))
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
			}
			sid := id(base)
			got := MapLines(t, newMapper(sid), sid, harness, journal, side)
			Golden(t, filepath.Join("testdata", "golden", base+".json"), got, update)
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
			g := MapLines(t, newMapper(id), id, harness, journal, side)
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

// Golden compares got, as indented JSON, with the golden file at path (a
// *T of the same type is decoded from it and compared with go-cmp); with
// update it writes the file instead.
func Golden[T any](t testing.TB, path string, got T, update bool) {
	t.Helper()
	if update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	var want T
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// SessionEvent is one event an Engine publishes and the session it is for.
type SessionEvent struct {
	Session string            `json:"session"`
	Event   agentbridge.Event `json:"event"`
}

// Engine is the mapping of a source whose journals speak for several
// sessions (a subagent's rollout for its parent's session): Line maps one
// line of journal name to the events it publishes and the code it is
// skipped with; After, when not nil, what it publishes once a line's
// events are folded (entries of the same line); End, when not nil, what it
// publishes once a journal is read to its end.
type Engine struct {
	Line  func(name string, line []byte) ([]SessionEvent, string)
	After func(name string) []SessionEvent
	End   func(name string) []SessionEvent
}

// Journal is one journal an Engine reads: its name and content.
type Journal struct {
	Name string
	Data []byte
}

// FilesGolden is what an Engine makes of journals read one after the
// other: per journal, its lines' results as in LineGolden (one entry per
// line and session, GoldenLine.Session naming it), then the snapshots of
// the sessions the events fold into that are not stopped, by id.
type FilesGolden struct {
	Files     []FileGolden           `json:"files"`
	Snapshots []agentbridge.Snapshot `json:"snapshots"`
}

// FileGolden is one journal's part of a FilesGolden.
type FileGolden struct {
	Name  string       `json:"name"`
	Lines []GoldenLine `json:"lines"`
	End   []GoldenLine `json:"end,omitempty"`
}

// MapFiles maps journals line by line, in order, through the Engine
// newEngine makes (handed each session's fold view, as Sessions.View hands
// a running source), folding every event into its session of harness; it
// fails the test on an event the validator or the fold refuses, as
// MapLines does.
func MapFiles(t testing.TB, newEngine func(view func(session string) fold.View) Engine, harness string, journals []Journal) FilesGolden {
	t.Helper()
	var g FilesGolden
	sessions := map[string]*fold.Session{}
	e := newEngine(func(id string) fold.View { return fold.ViewOf(sessions[id]) })
	entries := func(n int, code string, evs []SessionEvent) []GoldenLine {
		t.Helper()
		if code != "" && !SkipCodes[code] {
			t.Fatalf("unknown code %q", code)
		}
		var out []GoldenLine
		if code != "" && len(evs) == 0 {
			out = append(out, goldenLine(n, code, nil))
		}
		for i := 0; i < len(evs); {
			id := evs[i].Session
			s := sessions[id]
			if s == nil {
				s = fold.NewSession(id, harness)
				sessions[id] = s
			}
			var run []agentbridge.Event
			for ; i < len(evs) && evs[i].Session == id; i++ {
				ev := evs[i].Event
				if issues := validate.Event(ev); len(issues) > 0 {
					t.Fatalf("invalid %s for %s: %+v", ev.Kind, id, issues)
				}
				if issues := s.Apply(ev); len(issues) > 0 {
					t.Fatalf("fold refused %s for %s: %+v", ev.Kind, id, issues)
				}
				run = append(run, ev)
			}
			l := goldenLine(n, code, run)
			l.Session = id
			out = append(out, l)
		}
		return out
	}
	for _, j := range journals {
		f := FileGolden{Name: j.Name, Lines: []GoldenLine{}}
		for i, line := range bytes.Split(bytes.TrimRight(j.Data, "\n"), []byte("\n")) {
			evs, code := e.Line(j.Name, line)
			f.Lines = append(f.Lines, entries(i+1, code, evs)...)
			if e.After != nil {
				f.Lines = append(f.Lines, entries(i+1, "", e.After(j.Name))...)
			}
		}
		if e.End != nil {
			f.End = entries(0, "", e.End(j.Name))
		}
		g.Files = append(g.Files, f)
	}
	for _, s := range sessions {
		if s.Stopped() {
			continue
		}
		snap := s.Snapshot()
		if issues := validate.Snapshot(snap, validate.Harnesses{harness: true}); len(issues) > 0 {
			t.Fatalf("snapshot of %s invalid: %+v", snap.ID, issues)
		}
		g.Snapshots = append(g.Snapshots, snap)
	}
	slices.SortFunc(g.Snapshots, func(a, b agentbridge.Snapshot) int { return strings.Compare(a.ID, b.ID) })
	return g
}
