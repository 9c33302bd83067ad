package sourcestest_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/example"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// splitExample cuts the synthetic transcript at each session record; its
// title is the session id (the example agent's id is the file name).
var splitExample = sourcestest.SplitAt(func(line []byte) (string, bool) {
	var r struct{ Type, Title string }
	if json.Unmarshal(line, &r) != nil || r.Type != "session" {
		return "", false
	}
	return r.Title, true
})

func exampleReplay() sourcestest.Replay {
	return sourcestest.Replay{
		New:     func(home string) hub.Source { return example.New(example.Config{Home: home}) },
		Split:   splitExample,
		Path:    func(_, recorded string) string { return sourcestest.After(recorded, "home") },
		Checked: sourcestest.Checked{Exits: true},
	}
}

func TestReplayExample(t *testing.T) {
	sc, err := sourcestest.LoadScenario(filepath.Join("testdata", "replay", "approve-then-second-session"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Recordings) != 1 || len(sc.Phases) != 10 {
		t.Fatalf("loaded %d recordings, %d phases; want 1, 10", len(sc.Recordings), len(sc.Phases))
	}
	exampleReplay().Check(t, sc)
}

// TestReplayGrowsAtOffsets checks what a source sees: the journal grows
// to the logged sizes (lines cut in two included), is rewritten when the
// log's size falls, and ends with the bytes the log never saw.
func TestReplayGrowsAtOffsets(t *testing.T) {
	sc, err := sourcestest.LoadScenario(filepath.Join("testdata", "replay", "approve-then-second-session"))
	if err != nil {
		t.Fatal(err)
	}
	h := exampleReplay().Run(t, sc.Recordings[0])
	a, ok := h.Shown("s-a")
	if !ok || a.Status != sourcestest.StatusExited || a.Title != "s-a" {
		t.Errorf("s-a = %+v, %v; want exited (its exit line is after the last logged size)", a, ok)
	}
	b, ok := h.Shown("s-b")
	if !ok || b.Status != sourcestest.StatusDone {
		t.Errorf("s-b = %+v, %v; want done", b, ok)
	}
	// The rewrite made the source read s-b again from the start: it
	// rebuilt the session and upserted it whole.
	if !slices.ContainsFunc(h.Calls(), func(c sourcestest.Call) bool { return c.Op == agentbridge.OpUpsert && c.SessionID == "s-b" }) {
		t.Error("no upsert of s-b after its journal was rewritten")
	}
	if d := h.Diagnostics(); len(d) > 0 {
		t.Errorf("diagnostics %+v", d)
	}
}

func TestSplitAt(t *testing.T) {
	first := func(line []byte) (string, bool) {
		id, ok := bytes.CutPrefix(line, []byte("start "))
		return string(id), ok
	}
	for _, tc := range []struct {
		name, in string
		want     []sourcestest.File
		err      bool
	}{
		{name: "one", in: "start a\nx\n", want: []sourcestest.File{{"a", []byte("start a\nx\n")}}},
		{name: "two", in: "start a\nx\nstart b\ny", want: []sourcestest.File{{"a", []byte("start a\nx\n")}, {"b", []byte("start b\ny")}}},
		{name: "lines before the first go with it", in: "z\nstart a\n", want: []sourcestest.File{{"a", []byte("z\nstart a\n")}}},
		{name: "a journal recorded twice keeps one copy", in: "start a\nx\nstart a\nx\n", want: []sourcestest.File{{"a", []byte("start a\nx\n")}}},
		{name: "the longer copy wins", in: "start a\nstart b\nstart a\nx\n", want: []sourcestest.File{{"a", []byte("start a\nx\n")}, {"b", []byte("start b\n")}}},
		{name: "no journal", in: "x\ny\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sourcestest.SplitAt(first)([]byte(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d files %q, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if got[i].Session != tc.want[i].Session || !bytes.Equal(got[i].Data, tc.want[i].Data) {
					t.Errorf("file %d = %s %q, want %s %q", i, got[i].Session, got[i].Data, tc.want[i].Session, tc.want[i].Data)
				}
			}
		})
	}
}

func TestAfter(t *testing.T) {
	for in, want := range map[string]string{
		"/Users/x/rec/copilot-home/session-state/abc/events.jsonl": "session-state/abc/events.jsonl",
		"/Users/x/rec/elsewhere/abc/events.jsonl":                  "",
		"copilot-home/a.jsonl":                                     "a.jsonl",
		"/copilot-home":                                            "",
	} {
		if got := sourcestest.After(in, "copilot-home"); got != want {
			t.Errorf("After(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCodesMatchSources: the codes Check fails on are package sources'.
func TestCodesMatchSources(t *testing.T) {
	if sourcestest.CodeInvalidEvent != sources.CodeInvalidEvent || sourcestest.CodePublishRefused != sources.CodePublishRefused {
		t.Error("the diagnostic codes differ from package sources'")
	}
}

// TestSkipCodes keeps the codes the golden harness accepts those of
// package sources.
func TestSkipCodes(t *testing.T) {
	want := map[string]bool{sources.CodeInvalidJSON: true, sources.CodeInvalidRecord: true}
	if !maps.Equal(sourcestest.SkipCodes, want) {
		t.Errorf("SkipCodes = %v, want %v", sourcestest.SkipCodes, want)
	}
}
