package sse

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder is a ResponseWriter that records the write deadlines
// http.ResponseController sets on it.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

func (d *deadlineRecorder) last(t *testing.T) time.Time {
	t.Helper()
	if len(d.deadlines) == 0 {
		t.Fatal("no write deadline was ever set")
	}
	return d.deadlines[len(d.deadlines)-1]
}

// TestHeartbeatDisarmsWriteDeadline: a write arms the deadline, the flush
// after a heartbeat clears it (an idle stream must not leave a timer that
// wakes the process 10 s later), and the next write arms it again.
func TestHeartbeatDisarmsWriteDeadline(t *testing.T) {
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	dw := newDeadlineWriter(rec, 10*time.Second, func() {})

	if _, err := dw.Write([]byte("id: 1\n")); err != nil {
		t.Fatal(err)
	}
	dw.Flush()
	if rec.last(t).IsZero() {
		t.Fatal("a write left no deadline armed")
	}

	dw.idle.Store(true)
	if _, err := dw.Write([]byte(": ping\n\n")); err != nil {
		t.Fatal(err)
	}
	dw.Flush()
	if !rec.last(t).IsZero() {
		t.Fatalf("after the heartbeat's flush the deadline is %v, want none", rec.last(t))
	}

	if _, err := dw.Write([]byte("id: 2\n")); err != nil {
		t.Fatal(err)
	}
	if rec.last(t).IsZero() {
		t.Fatal("the write after a heartbeat did not arm the deadline again")
	}
}

// TestDisarmKeepsAnAbort: a connection being aborted keeps its expired
// deadline even when a heartbeat's flush disarms at the same time.
func TestDisarmKeepsAnAbort(t *testing.T) {
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	dw := newDeadlineWriter(rec, 10*time.Second, func() {})
	dw.aborted.Store(true)
	dw.disarm()
	if got := rec.last(t); got.IsZero() || got.After(time.Now()) {
		t.Fatalf("deadline after disarm of an aborted writer = %v, want one already passed", got)
	}
}

var _ http.ResponseWriter = (*deadlineRecorder)(nil)
