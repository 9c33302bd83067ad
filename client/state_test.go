package client_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
)

func TestStateApply(t *testing.T) {
	a := agentbridge.Snapshot{ID: "a", Harness: "h", Status: agentbridge.StatusIdle}
	b := agentbridge.Snapshot{ID: "b", Harness: "h", Status: agentbridge.StatusRunning}
	var st client.State
	steps := []struct {
		ev      client.Event
		want    []agentbridge.Entry
		wantErr bool
	}{
		{client.Event{ID: 1, Name: "reset", Data: []byte(`{"source":"y","sessions":[{"id":"b","harness":"h","status":"running"},{"id":"a","harness":"h","status":"idle"}]}`)},
			[]agentbridge.Entry{{Source: "y", Snapshot: a}, {Source: "y", Snapshot: b}}, false},
		{client.Event{ID: 2, Name: "upsert", Data: []byte(`{"source":"x","snapshot":{"id":"b","harness":"h","status":"running"}}`)},
			[]agentbridge.Entry{{Source: "x", Snapshot: b}, {Source: "y", Snapshot: a}, {Source: "y", Snapshot: b}}, false},
		{client.Event{ID: 3, Name: "lifecycle", Data: []byte(`{"source":"x","sessionId":"b","event":{"kind":"turn.started"}}`)},
			[]agentbridge.Entry{{Source: "x", Snapshot: b}, {Source: "y", Snapshot: a}, {Source: "y", Snapshot: b}}, false},
		{client.Event{ID: 4, Name: "remove", Data: []byte(`{"source":"y","sessionId":"b"}`)},
			[]agentbridge.Entry{{Source: "x", Snapshot: b}, {Source: "y", Snapshot: a}}, false},
		{client.Event{ID: 5, Name: "reset", Data: []byte(`{"source":"y","sessions":[]}`)},
			[]agentbridge.Entry{{Source: "x", Snapshot: b}}, false},
		{client.Event{ID: 6, Name: "upsert", Data: []byte(`{"source":"x"}`)}, []agentbridge.Entry{{Source: "x", Snapshot: b}}, true},
		{client.Event{ID: 7, Name: "remove", Data: []byte(`{"sessionId":"b"}`)}, []agentbridge.Entry{{Source: "x", Snapshot: b}}, true},
		{client.Event{ID: 8, Name: "reset", Data: []byte(`[]`)}, []agentbridge.Entry{{Source: "x", Snapshot: b}}, true},
		{client.Event{ID: 9, Name: "harnesses", Data: []byte(`{"source":"x","enabledHarnesses":["h"]}`)}, []agentbridge.Entry{{Source: "x", Snapshot: b}}, false},
	}
	for _, s := range steps {
		err := st.Apply(s.ev)
		if (err != nil) != s.wantErr || (err != nil && !errors.Is(err, client.ErrBadEvent)) {
			t.Errorf("Apply(%s %d): err = %v, want error %v", s.ev.Name, s.ev.ID, err, s.wantErr)
		}
		if diff := cmp.Diff(s.want, st.Sessions()); diff != "" {
			t.Errorf("after %s %d (-want +got):\n%s", s.ev.Name, s.ev.ID, diff)
		}
	}
	if st.Revision() != 9 {
		t.Errorf("revision %d, want 9", st.Revision())
	}
	if h, ok := st.Harnesses("x"); !ok || !cmp.Equal(h, []string{"h"}) {
		t.Errorf("harnesses of x = %v, %v", h, ok)
	}
	c := st.Clone()
	st.Apply(client.Event{ID: 10, Name: "remove", Data: []byte(`{"source":"x","sessionId":"b"}`)})
	if len(c.Sessions()) != 1 || len(st.Sessions()) != 0 {
		t.Errorf("a clone shares state with its original")
	}
}

func FuzzStateApply(f *testing.F) {
	f.Add("reset", []byte(`{"source":"y","sessions":[{"id":"b","harness":"h","status":"running"}]}`))
	f.Add("upsert", []byte(`{"source":"x","snapshot":{"id":"b","harness":"h","status":"running"}}`))
	f.Add("remove", []byte(`{"source":"y","sessionId":"b"}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		var st client.State
		before := st.Sessions()
		if err := st.Apply(client.Event{ID: 1, Name: name, Data: data}); err != nil {
			if !errors.Is(err, client.ErrBadEvent) {
				t.Fatalf("untyped error %v", err)
			}
			if !cmp.Equal(before, st.Sessions()) {
				t.Fatalf("a refused event changed the state")
			}
		}
		for _, e := range st.Sessions() {
			if e.Source == "" {
				t.Fatalf("a session without a source: %+v", e)
			}
		}
	})
}

func TestStateKeepsHostsApart(t *testing.T) {
	a := agentbridge.Snapshot{ID: "a", Harness: "h", Status: agentbridge.StatusIdle}
	var st client.State
	for i, data := range []string{
		`{"source":"x","sessions":[{"id":"a","harness":"h","status":"idle"}]}`,
		`{"source":"x","host":"devbox","sessions":[{"id":"a","harness":"h","status":"idle"}]}`,
		`{"source":"x","host":"nas","sessions":[{"id":"a","harness":"h","status":"idle"}]}`,
	} {
		if err := st.Apply(client.Event{ID: uint64(i + 1), Name: "reset", Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	// A host's reset and remove touch that host's sessions only.
	if err := st.Apply(client.Event{ID: 4, Name: "reset", Data: []byte(`{"source":"x","host":"nas","sessions":[]}`)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(client.Event{ID: 5, Name: "remove", Data: []byte(`{"source":"x","host":"devbox","sessionId":"b"}`)}); err != nil {
		t.Fatal(err)
	}
	want := []agentbridge.Entry{{Source: "x", Snapshot: a}, {Source: "x", Host: "devbox", Snapshot: a}}
	if diff := cmp.Diff(want, st.Sessions()); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
	if _, ok := st.SessionOn("devbox", "x", "a"); !ok {
		t.Error("SessionOn(devbox, x, a) not found")
	}
}
