package codex

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	foldpkg "github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// replay feeds the rollouts of a case directory to an engine, file by file
// in the given order, line by line, flushing at each file's end, and
// returns every published event.
func replay(tb testing.TB, e *Engine, dir string, names []string) []Pub {
	tb.Helper()
	var all []Pub
	for _, name := range names {
		key := keyOf(name)
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			all = append(all, e.Line(key, sc.Bytes())...)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			tb.Fatal(err)
		}
		all = append(all, e.Flush(key)...)
	}
	return all
}

// foldAll applies events through the contract's fold, failing on any event
// the hub would reject, and returns the live sessions' snapshots by id.
func foldAll(tb testing.TB, pubs []Pub) []agentbridge.Snapshot {
	tb.Helper()
	sessions := map[string]*foldpkg.Session{}
	for i, p := range pubs {
		s := sessions[p.Session]
		if s == nil {
			s = foldpkg.NewSession(p.Session, Harness)
			sessions[p.Session] = s
		}
		if is := s.Apply(p.Event); len(is) > 0 {
			tb.Fatalf("event %d %+v for %s rejected: %+v", i, p.Event, p.Session, is)
		}
	}
	var out []agentbridge.Snapshot
	for _, s := range sessions {
		if !s.Stopped() {
			snap := s.Snapshot()
			if is := validate.Snapshot(snap, validate.Harnesses{Harness: true}); len(is) > 0 {
				tb.Fatalf("snapshot of %s invalid: %+v", snap.ID, is)
			}
			out = append(out, snap)
		}
	}
	slices.SortFunc(out, func(a, b agentbridge.Snapshot) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// leak finds what must never be published in display text: an absolute
// path.
var leak = regexp.MustCompile(`(^|[\s"'(=:])(/|~/)[^/\s]+/`)

func checkPublishable(tb testing.TB, pubs []Pub) {
	tb.Helper()
	for i, p := range pubs {
		if !validate.ValidID(p.Session) {
			tb.Errorf("event %d: session id %q is not an identity value", i, p.Session)
		}
		if is := validate.Event(p.Event); len(is) > 0 {
			tb.Errorf("event %d %+v invalid: %+v", i, p.Event, is)
		}
		for _, text := range []string{p.Event.Title, p.Event.Name, p.Event.Type, p.Event.Reason, p.Event.Summary, p.Event.PromptText} {
			if leak.MatchString(text) {
				tb.Errorf("event %d: display text %q carries a path", i, text)
			}
		}
	}
}

func rolloutNames(tb testing.TB, dir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".jsonl") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// engine is an Engine's mapping for the golden harness: each rollout by
// its key, a line that is not a JSON object skipped as invalid-json, a
// flush at each rollout's end.
func engine(e *Engine) sourcestest.Engine {
	pubs := func(ps []Pub) []sourcestest.SessionEvent {
		out := make([]sourcestest.SessionEvent, 0, len(ps))
		for _, p := range ps {
			out = append(out, sourcestest.SessionEvent{Session: p.Session, Event: p.Event})
		}
		return out
	}
	return sourcestest.Engine{
		Line: func(name string, line []byte) ([]sourcestest.SessionEvent, string) {
			evs := pubs(e.Line(keyOf(name), line))
			if e.Bad() {
				return evs, sources.CodeInvalidJSON
			}
			return evs, ""
		},
		End: func(name string) []sourcestest.SessionEvent { return pubs(e.Flush(keyOf(name))) },
	}
}

// TestGolden replays every fixture under testdata/rollouts/<case>/, file
// by file in name order, line by line, and compares the events of every
// line (by session) and the folded snapshots with
// testdata/golden/<case>.json. Run with -update to rewrite them after a
// deliberate mapping change.
func TestGolden(t *testing.T) {
	cases, err := os.ReadDir("testdata/rollouts")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			dir := filepath.Join("testdata/rollouts", c.Name())
			var js []sourcestest.Journal
			for _, name := range rolloutNames(t, dir) {
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				js = append(js, sourcestest.Journal{Name: name, Data: data})
			}
			checkPublishable(t, replay(t, NewEngine(), dir, rolloutNames(t, dir)))
			got := sourcestest.MapFiles(t, func(func(string) foldpkg.View) sourcestest.Engine { return engine(NewEngine()) }, Harness, js)
			sourcestest.Golden(t, filepath.Join("testdata", "golden", c.Name()+".json"), got, *update)
		})
	}
}

// TestSubagentOrder checks that a subagent thread is folded into its
// parent's session whichever rollout is read first, and never becomes a
// root session of its own.
func TestSubagentOrder(t *testing.T) {
	for _, c := range []string{"subagent-parent-link", "subagent-lifecycle", "live-0.171-subagents", "live-0.165-subagents"} {
		dir := filepath.Join("testdata/rollouts", c)
		names := rolloutNames(t, dir)
		want := foldAll(t, replay(t, NewEngine(), dir, names))
		rev := slices.Clone(names)
		slices.Reverse(rev)
		t.Run(c, func(t *testing.T) {
			got := foldAll(t, replay(t, NewEngine(), dir, rev))
			if len(got) != 1 {
				t.Fatalf("children first: %d sessions, want only the parent's", len(got))
			}
			// The order of the subagents follows the order they became
			// known, and a child announced before its parent's spawn record
			// is read has no nickname yet (the contract has no event to
			// rename a subagent): compare ids and statuses.
			sortSubs := func(s []agentbridge.Snapshot) {
				for i := range s {
					slices.SortFunc(s[i].Subagents, func(a, b agentbridge.Subagent) int { return strings.Compare(a.ID, b.ID) })
					for j := range s[i].Subagents {
						s[i].Subagents[j].Title, s[i].Subagents[j].Type = "", ""
					}
				}
			}
			sortSubs(want)
			sortSubs(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("children first: snapshot mismatch (-parent first +children first):\n%s", diff)
			}
		})
	}
}
