package sourcestest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/hub"
)

// The diagnostic codes of package sources that mean a source emitted what
// the fold or the hub refused (sources.CodeInvalidEvent,
// sources.CodePublishRefused; this package cannot import sources, whose
// own tests import it).
const (
	codeInvalidEvent   = "invalid-event"
	codePublishRefused = "publish-refused"
)

// Replay plays recordings into a real source: it starts the source on an
// empty temporary home, grows each journal there to the sizes the
// recording logged, in the logged order (so lines arrive cut where the
// agent's writes cut them, and journals of several sessions interleave as
// they did), then writes what the log did not see (a journal's last bytes
// often land after its last logged size), and hands back the Hub the source
// published to. A logged size below what was written means the agent
// rewrote the journal: a new file of that size (the recording's final
// bytes up to it) is renamed over it, as the recorder's log shows it
// (transcript_new).
type Replay struct {
	// New returns the source to run over home (required).
	New func(home string) hub.Source
	// Enabled lists the harnesses switched on; nil switches on all of the
	// source's.
	Enabled []string
	// Split cuts a recording's transcript into its journals; nil treats it
	// as one journal (Whole).
	Split func(transcript []byte) ([]File, error)
	// Path says where the journal of session goes, relative to home, given
	// the path the recording logged for it (required; see After).
	Path func(session, recorded string) string
	// Checked says how Check reads the phases.
	Checked
}

// stageWait bounds the wait for the source to read one stage.
var stageWait = 2 * time.Second

// quiet is how long the source must stay still after the last write for
// Run to take it as done.
var quiet = 300 * time.Millisecond

// Run replays rec (see Replay) and returns the Hub once the source has
// read everything and gone quiet. The source stops when the test ends;
// the test fails if the hub refused any of its calls.
func (r Replay) Run(t testing.TB, rec *Recording) *Hub {
	t.Helper()
	split := r.Split
	if split == nil {
		split = Whole(rec)
	}
	files, err := split(rec.Transcript)
	if err != nil {
		t.Fatalf("%s: %v", rec.Name, err)
	}
	home := t.TempDir()
	h := Start(t, r.New(home), r.Enabled)

	type journal struct {
		data    []byte
		path    string
		written int
	}
	bySession := map[string]*journal{}
	var order []*journal
	recorded := map[string]string{}
	for _, g := range rec.Growth {
		if _, ok := recorded[g.Session]; !ok {
			recorded[g.Session] = g.Path
		}
	}
	for _, f := range files {
		rel := r.Path(f.Session, recorded[f.Session])
		if rel == "" || filepath.IsAbs(rel) {
			t.Fatalf("%s: Path gave %q for session %s", rec.Name, rel, f.Session)
		}
		j := &journal{data: f.Data, path: filepath.Join(home, rel)}
		bySession[f.Session] = j
		order = append(order, j)
	}
	rw, err := newReadWatch()
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	defer rw.close()
	write := func(j *journal, size int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(j.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := rw.add(filepath.Dir(j.path)); err != nil {
			t.Fatal(err)
		}
		rw.reads(0) // forget earlier reads
		if size < j.written {
			// Rewritten: a new file with the first size bytes replaces it.
			tmp := j.path + ".rewrite~"
			if err := os.WriteFile(tmp, j.data[:size], 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, j.path); err != nil {
				t.Fatal(err)
			}
		} else {
			fd, err := os.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fd.Write(j.data[j.written:size]); err != nil {
				t.Fatal(err)
			}
			if err := fd.Close(); err != nil {
				t.Fatal(err)
			}
		}
		j.written = size
		// Let the source read this stage (often a cut line) on its own
		// before the next write; a slow source just sees stages merged.
		rw.waitRead(j.path, stageWait)
	}
	for _, g := range rec.Growth {
		j := bySession[g.Session]
		if j == nil {
			continue // a session the split found no journal for (e.g. the recorder's own row)
		}
		size := int(min(g.Size, int64(len(j.data))))
		if size != j.written {
			write(j, size)
		}
	}
	for _, j := range order {
		if j.written < len(j.data) {
			write(j, len(j.data))
		}
	}
	settle(t, h, rw)
	return h
}

// settle waits until the source has neither read a journal nor called the
// hub for quiet (bounded by Timeout).
func settle(t testing.TB, h *Hub, rw *readWatch) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	last := len(h.Calls())
	for still := time.Now(); time.Since(still) < quiet; {
		if time.Now().After(deadline) {
			t.Fatalf("the source did not settle within %v", Timeout)
		}
		read := len(rw.reads(10*time.Millisecond)) > 0
		if n := len(h.Calls()); n != last || read {
			last, still = n, time.Now()
		}
	}
}

// Check replays every recording of sc as a subtest and checks each
// against sc's phases (CheckPhases), failing the subtest on every
// mismatch; notes on skipped phases are logged. A scenario without a
// recording is skipped. Events the fold rejected (diagnostic
// invalid-event) fail it too: a source must only emit valid events.
func (r Replay) Check(t *testing.T, sc *Scenario) {
	t.Helper()
	if len(sc.Recordings) == 0 {
		t.Skipf("%s has no recording", sc.Name)
	}
	for _, rec := range sc.Recordings {
		t.Run(rec.Name, func(t *testing.T) {
			h := r.Run(t, rec)
			problems, notes := CheckPhases(sc.Phases, h.Transitions(), r.Checked)
			for _, n := range notes {
				t.Log(n)
			}
			for _, p := range problems {
				t.Error(p)
			}
			for _, d := range h.Diagnostics() {
				if d.Code == codeInvalidEvent || d.Code == codePublishRefused {
					t.Errorf("the source reported %s: %s", d.Code, d.Message)
				}
			}
			if len(problems) > 0 {
				t.Log(describeTransitions(h.Transitions()))
			}
		})
	}
}

func describeTransitions(tr []Transition) string {
	s := "status changes:"
	for _, x := range tr {
		s += fmt.Sprintf(" %s→%s", short(x.Session), State(x.Status, x.Ended))
	}
	return s
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
