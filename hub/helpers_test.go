package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

// wait is the generous bound for anything a test waits on.
// wait bounds a wait for an event: a hang bound, not a timing (-race on a
// loaded machine is slow).
const wait = time.Minute

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return t0 }

// newHub returns a hub with a fixed clock and the given options.
func newHub(tb testing.TB, o Options) *Hub {
	tb.Helper()
	if o.Now == nil {
		o.Now = fixedNow
	}
	return New(o)
}

func info(id string, harnesses ...string) agentbridge.SourceInfo {
	in := agentbridge.SourceInfo{ID: id, DisplayName: id, EnvironmentVariables: []string{}}
	for _, h := range harnesses {
		in.Harnesses = append(in.Harnesses, agentbridge.Harness{ID: h, DisplayName: h})
	}
	return in
}

// fakeSource is a running source driven by the test: it hands out its
// Start and, on every harness change, re-sends a reset of the sessions in
// live whose harness is switched on.
type fakeSource struct {
	info    agentbridge.SourceInfo
	started chan Start
	mu      sync.Mutex
	live    []*fold.Session
	resets  chan []string // each enabled set it answered
	err     error         // returned from Run once started is read
	deaf    bool          // leaves harness changes to the test
}

func newFake(in agentbridge.SourceInfo) *fakeSource {
	return &fakeSource{info: in, started: make(chan Start, 1), resets: make(chan []string, 16)}
}

func (f *fakeSource) Info() agentbridge.SourceInfo { return f.info }

func (f *fakeSource) Run(ctx context.Context, st Start) error {
	f.started <- st
	if f.err != nil {
		return f.err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case set := <-st.Changes:
			if f.deaf {
				continue
			}
			f.mu.Lock()
			var keep []*fold.Session
			for _, s := range f.live {
				if slices.Contains(set, s.Harness()) {
					keep = append(keep, s)
				}
			}
			f.mu.Unlock()
			if err := st.Publisher.Reset(keep); err != nil {
				panic(err)
			}
			f.resets <- set
		}
	}
}

// running adds the sources to a new hub, runs it until the test ends and
// returns each fake's Start.
func running(tb testing.TB, h *Hub, fakes ...*fakeSource) []Start {
	tb.Helper()
	for _, f := range fakes {
		if err := h.Add(f); err != nil {
			tb.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	tb.Cleanup(func() { cancel(); <-done })
	starts := make([]Start, len(fakes))
	for i, f := range fakes {
		select {
		case starts[i] = <-f.started:
		case <-time.After(wait):
			tb.Fatal("source not started")
		}
	}
	return starts
}

func snap(id, harness string, st agentbridge.Status) agentbridge.Snapshot {
	return agentbridge.Snapshot{ID: id, Harness: harness, Status: st}
}

// placed is a running session of harness "a" in cwd, of process pid.
func placed(id, cwd string, pid int) agentbridge.Snapshot {
	s := snap(id, "a", agentbridge.StatusRunning)
	s.Cwd, s.PID = cwd, pid
	return s
}

func sessionOf(s agentbridge.Snapshot) *fold.Session { return fold.FromSnapshot(s) }

// client applies a stream the way a client that only understands
// reset/upsert/remove does.
type client map[string]map[string]agentbridge.Entry

func (c client) apply(tb testing.TB, r Record) {
	tb.Helper()
	switch r.Name {
	case agentbridge.RecordReset:
		var d resetData
		mustDecode(tb, r, &d)
		if d.Sessions == nil {
			tb.Fatalf("reset %s: sessions is null, want an array", r.Data)
		}
		c[d.Source] = map[string]agentbridge.Entry{}
		for _, s := range d.Sessions {
			c[d.Source][s.ID] = agentbridge.Entry{Source: d.Source, Snapshot: s, Activity: d.Activity[s.ID], Ended: d.Ended[s.ID]}
		}
	case agentbridge.RecordUpsert:
		var d upsertData
		mustDecode(tb, r, &d)
		if c[d.Source] == nil {
			c[d.Source] = map[string]agentbridge.Entry{}
		}
		c[d.Source][d.Snapshot.ID] = agentbridge.Entry{Source: d.Source, Snapshot: d.Snapshot, Activity: d.Activity, Ended: d.Ended}
	case agentbridge.RecordRemove:
		var d removeData
		mustDecode(tb, r, &d)
		delete(c[d.Source], d.SessionID)
	case agentbridge.RecordLifecycle, agentbridge.RecordDiagnostic, agentbridge.RecordHarnesses:
		var m map[string]any
		mustDecode(tb, r, &m)
	default:
		tb.Fatalf("unknown record name %q", r.Name)
	}
}

// entries lists the client's sessions as Sessions does.
func (c client) entries() []agentbridge.Entry {
	out := []agentbridge.Entry{}
	for _, m := range c {
		for _, e := range m {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b agentbridge.Entry) int {
		if a.Source != b.Source {
			if a.Source < b.Source {
				return -1
			}
			return 1
		}
		if a.Snapshot.ID < b.Snapshot.ID {
			return -1
		}
		if a.Snapshot.ID > b.Snapshot.ID {
			return 1
		}
		return 0
	})
	return out
}

func fromEntries(es []agentbridge.Entry) client {
	c := client{}
	for _, e := range es {
		if c[e.Source] == nil {
			c[e.Source] = map[string]agentbridge.Entry{}
		}
		c[e.Source][e.Snapshot.ID] = e
	}
	return c
}

func mustDecode(tb testing.TB, r Record, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Data, v); err != nil {
		tb.Fatalf("record %d %s: data %q: %v", r.Rev, r.Name, r.Data, err)
	}
}

// next reads one live record within the wait bound.
func next(tb testing.TB, s *Subscription) Record {
	tb.Helper()
	select {
	case r := <-s.C:
		return r
	case <-s.Done:
		tb.Fatal("subscription ended")
	case <-time.After(wait):
		tb.Fatal("no record")
	}
	return Record{}
}

// drain reads live records until the subscriber has seen rev.
func drain(tb testing.TB, s *Subscription, rev uint64) []Record {
	tb.Helper()
	var out []Record
	for {
		if n := len(out); n > 0 && out[n-1].Rev >= rev {
			return out
		}
		out = append(out, next(tb, s))
	}
}

func names(rs []Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

func issuePaths(tb testing.TB, err error) []string {
	tb.Helper()
	ie, ok := err.(*InvalidError)
	if !ok {
		tb.Fatalf("error = %v, want *InvalidError", err)
	}
	var out []string
	for _, is := range ie.Issues {
		out = append(out, fmt.Sprintf("%s %s", is.Path, is.Code))
	}
	return out
}
