package bridgetest

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
)

// Recorder follows a bridge's stream as a client does (client.Follow
// into a client.State) and records what came, for a test to check the
// bridge's promises: every id in order (a duplicate too, which Follow does
// not deliver), the first record of each connection, drops and resumes.
type Recorder struct {
	mu      sync.Mutex
	state   client.State
	ids     []uint64
	firsts  []string
	first   bool
	resumed int
	drops   int
	changed chan struct{}
	stop    func()
}

// Follow follows c's stream with o (its OnConnect, OnDrop and
// OnDuplicate are the Recorder's) until the test ends. A zero Backoff
// retries every millisecond or so.
func Follow(t testing.TB, c *client.Client, o client.FollowOptions) *Recorder {
	t.Helper()
	r := &Recorder{changed: make(chan struct{}, 1)}
	if o.Backoff == (client.Backoff{}) {
		o.Backoff = client.Backoff{Min: time.Millisecond, Max: 20 * time.Millisecond}
	}
	o.OnConnect = func(resumed bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.first = true
		if resumed {
			r.resumed++
		}
	}
	o.OnDrop = func(error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.drops++
	}
	o.OnDuplicate = func(ev client.Event) { r.seen(ev) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- c.Follow(ctx, o, func(ev client.Event) error {
			r.seen(ev)
			r.mu.Lock()
			err := r.state.Apply(ev)
			r.mu.Unlock()
			select {
			case r.changed <- struct{}{}:
			default:
			}
			return err
		})
	}()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("following the stream ended with %v", err)
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

// Stop ends the following (it also ends with the test).
func (r *Recorder) Stop() { r.stop() }

func (r *Recorder) seen(ev client.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first {
		r.firsts = append(r.firsts, ev.Name)
		r.first = false
	}
	r.ids = append(r.ids, ev.ID)
}

// Record is what a Recorder saw so far.
type Record struct {
	Revision uint64              // of the state
	Sessions []agentbridge.Entry // the state
	IDs      []uint64            // every id, in order, duplicates too
	Firsts   []string            // the first record name of each connection
	Resumed  int                 // connections after the first
	Drops    int                 // connections lost or refused
}

// Record returns what the Recorder saw so far.
func (r *Recorder) Record() Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Record{Revision: r.state.Revision(), Sessions: r.state.Sessions(), IDs: slices.Clone(r.ids),
		Firsts: slices.Clone(r.firsts), Resumed: r.resumed, Drops: r.drops}
}

// Harnesses is the State's Harnesses.
func (r *Recorder) Harnesses(source string) ([]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Harnesses(source)
}

// Converge waits (up to 20 s) until the state lists the sessions GET
// /v1/sessions (with the filters q) shows and want holds for them; it
// returns them. A state at the very revision of the answer that differs
// from it fails the test at once: applying the stream must give exactly
// the snapshot.
func (r *Recorder) Converge(t testing.TB, c *client.Client, q url.Values, want func([]agentbridge.Entry) bool) []agentbridge.Entry {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		l, err := c.Sessions(t.Context(), q)
		if err != nil {
			t.Fatalf("GET /v1/sessions: %v", err)
		}
		got := r.Record()
		same := cmp.Equal(got.Sessions, l.Sessions)
		if got.Revision == l.Revision && !same {
			t.Fatalf("the stream's state at revision %d differs from GET /v1/sessions (-get +stream):\n%s", l.Revision, cmp.Diff(l.Sessions, got.Sessions))
		}
		if same && want(l.Sessions) {
			return got.Sessions
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream's state at revision %d never reached GET /v1/sessions at %d (-get +stream):\n%s",
				got.Revision, l.Revision, cmp.Diff(l.Sessions, got.Sessions))
		}
		select {
		case <-r.changed:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// CheckIDs fails the test unless every id seen is above the one before:
// no duplicate, no step back.
func (r *Recorder) CheckIDs(t testing.TB) {
	t.Helper()
	ids := r.Record().IDs
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Errorf("ids went from %d to %d: ids must only grow (a duplicate or a step back)", ids[i-1], ids[i])
			return
		}
	}
}
