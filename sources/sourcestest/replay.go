package sourcestest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
)

// Replay plays recordings into a real source: it starts the source on an
// empty temporary home, grows each journal there to the sizes the
// recording logged, in the logged order (so lines arrive cut where the
// agent's writes cut them, and journals of several sessions interleave as
// they did), then writes what the log did not see (a journal's last bytes
// often land after its last logged size), and hands back the Hub the source
// published to. A logged size below what was written means the agent
// rewrote the journal: it is truncated and written again up to that size.
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
	src := r.New(home)
	enabled := r.Enabled
	if enabled == nil {
		for _, h := range src.Info().Harnesses {
			enabled = append(enabled, h.ID)
		}
	}
	h := New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, hub.Start{Enabled: enabled, Publisher: h}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
		if n := h.Refused(); n > 0 {
			t.Errorf("the hub refused %d calls", n)
		}
	})
	h.WaitFor(t, "the first reset", func(h *Hub) bool { return h.Resets() > 0 })

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
	write := func(j *journal, size int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(j.path), 0o755); err != nil {
			t.Fatal(err)
		}
		flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
		if size < j.written {
			flags |= os.O_TRUNC
			j.written = 0
		}
		fd, err := os.OpenFile(j.path, flags, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		before := sources.ReadActivity().Reads
		if _, err := fd.Write(j.data[j.written:size]); err != nil {
			t.Fatal(err)
		}
		if err := fd.Close(); err != nil {
			t.Fatal(err)
		}
		j.written = size
		// Let the source read this stage (often a cut line) on its own
		// before the next write; a slow source just sees stages merged.
		for deadline := time.Now().Add(stageWait); sources.ReadActivity().Reads == before && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
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
	settle(t, h)
	return h
}

// settle waits until neither the hub nor the tailers have done anything
// for quiet (bounded by Timeout).
func settle(t testing.TB, h *Hub) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	last, reads := len(h.Calls()), sources.ReadActivity().Reads
	still := time.Now()
	for time.Since(still) < quiet {
		if time.Now().After(deadline) {
			t.Fatalf("the source did not settle within %v", Timeout)
		}
		time.Sleep(10 * time.Millisecond)
		if n, r := len(h.Calls()), sources.ReadActivity().Reads; n != last || r != reads {
			last, reads, still = n, r, time.Now()
		}
	}
}

// Check replays every recording of sc as a subtest and checks each
// against sc's phases (CheckPhases), failing the subtest on every
// mismatch; notes on skipped phases are logged. A scenario without a
// recording is skipped.
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
			if len(problems) > 0 {
				t.Log(describeTransitions(h.Transitions()))
			}
		})
	}
}

func describeTransitions(tr []Transition) string {
	s := "status changes:"
	for _, x := range tr {
		s += fmt.Sprintf(" %s→%s", short(x.Session), State(x.Status))
	}
	return s
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
