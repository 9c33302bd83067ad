//go:build unix

package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbridge/agentbridge"
)

// TestSlowFilterDelaysNoOtherClient: a client filtering by project and
// ancestor waits on the file system and /proc alone. The project's .git is a
// FIFO, and the /proc stat of the sessions' processes is a FIFO that answers
// only when the test writes it (a /proc that does not answer). While the
// filtered client is stuck on it — connecting, and later on a live record —
// an unfiltered snapshot, a publish and an unfiltered stream go on; once
// /proc answers, the filtered client gets exactly its sessions.
func TestSlowFilterDelaysNoOtherClient(t *testing.T) {
	tmp := t.TempDir()
	proj := filepath.Join(tmp, "proj")
	if err := os.MkdirAll(filepath.Join(proj, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The subscriptions close after the stalled readers are let go (the
	// cleanups run last first), so a failed test ends.
	var subs []*Subscription
	t.Cleanup(func() {
		for _, s := range subs {
			s.Close()
		}
	})
	st := newStalls(t)
	st.fifo(filepath.Join(proj, ".git"))
	procRoot := fakeProc(t, map[int]int{1: 0, 10: 1, 11: 10, 30: 1})
	slow20, slow21 := st.stat(procRoot, 20), st.stat(procRoot, 21)

	h := newHub(t, Options{ProcRoot: procRoot})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	publish := func(ops ...agentbridge.Op) {
		if err := h.Publish("p", ops); err != nil {
			t.Error(err) // may run on another goroutine
		}
	}
	// "mine" runs in the project under the terminal 10; "elsewhere" is
	// outside the project (its answer reads the project's FIFO .git).
	publish(agentbridge.Op{Op: agentbridge.OpReset, Sessions: []agentbridge.Snapshot{
		placed("mine", filepath.Join(proj, "pkg"), 20),
		placed("elsewhere", filepath.Join(tmp, "elsewhere"), 30),
	}})
	unfiltered := h.Subscribe(h.Revision(), true, agentbridge.Filter{})
	subs = append(subs, unfiltered)
	f := agentbridge.Filter{Project: proj, AncestorPID: 10}

	// others checks that, while the filtered client waits on /proc, an
	// unfiltered snapshot, a publish and the unfiltered stream go on.
	others := func(id string) {
		t.Helper()
		within(t, "an unfiltered snapshot", func() { h.Sessions(agentbridge.Filter{}) })
		within(t, "a publish", func() { publish(agentbridge.Op{Op: agentbridge.OpUpsert, Session: placed(id, "/", 1)}) })
		got := drain(t, unfiltered, h.Revision())
		if r := got[len(got)-1]; r.Name != agentbridge.RecordUpsert || recordSession(t, r) != id {
			t.Fatalf("unfiltered stream got %s %s, want the upsert of %s", r.Name, recordSession(t, r), id)
		}
	}

	// Connecting: the filtered client's initial state waits on pid 20.
	subbed := make(chan *Subscription, 1)
	go func() { subbed <- h.Subscribe(0, false, f) }()
	stat20 := slow20.opened()
	others("other1")
	select {
	case <-subbed:
		t.Fatal("the filtered client connected before /proc answered")
	default:
	}
	stat20.answer(10)
	var sub *Subscription
	select {
	case sub = <-subbed:
	case <-time.After(wait):
		t.Fatal("the filtered client did not connect once /proc answered")
	}
	subs = append(subs, sub)
	c := client{}
	for _, r := range sub.Initial {
		c.apply(t, r)
	}
	if diff := cmp.Diff([]agentbridge.Entry{{Source: "p", Snapshot: placed("mine", filepath.Join(proj, "pkg"), 20)}}, c.entries()); diff != "" {
		t.Fatalf("filtered initial state (-want +got):\n%s", diff)
	}

	// Streaming: a session of pid 21 comes in; the filtered client's
	// record waits on /proc, the publish does not.
	within(t, "the publish of a session whose /proc is slow", func() {
		publish(agentbridge.Op{Op: agentbridge.OpUpsert, Session: placed("new", proj, 21)})
	})
	added := h.Revision()
	stat21 := slow21.opened()
	others("other2")
	select {
	case r := <-sub.C:
		t.Fatalf("the filtered client got %s %s before /proc answered", r.Name, recordSession(t, r))
	default:
	}
	stat21.answer(11) // 21 runs under 11, under the terminal 10
	for _, r := range drain(t, sub, added) {
		c.apply(t, r)
	}
	_, want := h.Sessions(f)
	if diff := cmp.Diff(want, c.entries()); diff != "" {
		t.Errorf("filtered stream applied differs from Sessions (-sessions +stream):\n%s", diff)
	}
	if len(want) != 2 {
		t.Errorf("Sessions(%+v) = %d sessions, want mine and new", f, len(want))
	}
}

// TestStuckFilterIsCutOff: a filtered client whose /proc does not answer
// falls behind like a client that does not read: once a whole queue of
// records waits for the answer, it is cut off (to reconnect and resume),
// and the hub keeps nothing more for it.
func TestStuckFilterIsCutOff(t *testing.T) {
	var subs []*Subscription
	t.Cleanup(func() {
		for _, s := range subs {
			s.Close()
		}
	})
	st := newStalls(t)
	procRoot := fakeProc(t, map[int]int{1: 0, 10: 1})
	slow := st.stat(procRoot, 20)
	h := newHub(t, Options{ProcRoot: procRoot, QueueSize: 4, Registry: prometheus.NewRegistry()})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe(0, false, agentbridge.Filter{AncestorPID: 10})
	subs = append(subs, sub)
	publish := func(id string, pid int) {
		t.Helper()
		within(t, "a publish", func() {
			if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: placed(id, "", pid)}}); err != nil {
				t.Error(err)
			}
		})
	}
	publish("s0", 20)
	stuck := slow.opened()
	for i := range 3 {
		publish(fmt.Sprint("s", i+1), 1)
	}
	select {
	case <-sub.Done:
		t.Fatal("cut off with less than a queue of records waiting")
	default:
	}
	publish("s4", 1) // the fifth: a whole queue waits behind s0
	select {
	case <-sub.Done:
	case <-time.After(wait):
		t.Fatal("a filtered client stuck on /proc was not cut off")
	}
	if !sub.CutOff() {
		t.Error("CutOff() = false for a filtered client stuck on /proc")
	}
	stuck.answer(10)
}

// stalls are the FIFOs a test stalls readers on. When the test ends, the
// readers still waiting are let go (release), so that a test that failed
// while the hub was blocked ends.
type stalls struct {
	t       *testing.T
	paths   []string
	writers []*os.File
}

func newStalls(t *testing.T) *stalls {
	s := &stalls{t: t}
	t.Cleanup(s.release)
	return s
}

// fifo makes a FIFO at p.
func (s *stalls) fifo(p string) {
	s.t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.paths = append(s.paths, p)
}

// release ends every reader's wait: one in an open gets a writer that
// closes at once, one in a read gets the end of the file.
func (s *stalls) release() {
	for _, p := range s.paths {
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	for _, w := range s.writers {
		w.Close()
	}
}

// within runs what and fails when it does not return in a long while (a
// hub blocked on a client's I/O never returns).
func within(t *testing.T, name string, what func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); what() }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("%s is blocked by a filtered client's I/O", name)
	}
}

// stat makes /proc/<pid>/stat under root a FIFO: it answers only when the
// test writes it.
func (s *stalls) stat(root string, pid int) slowStat {
	s.t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	p := filepath.Join(dir, "stat")
	s.fifo(p)
	return slowStat{s: s, path: p, pid: pid}
}

// slowStat is a /proc/<pid>/stat that answers when the test writes it.
type slowStat struct {
	s    *stalls
	path string
	pid  int
	w    *os.File // once opened
}

// opened returns once a reader has opened the stat and waits for it.
func (st slowStat) opened() slowStat {
	t := st.s.t
	t.Helper()
	got := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(st.path, os.O_WRONLY, 0) // returns when a reader opens
		if err != nil {
			t.Error(err)
		}
		got <- f
	}()
	select {
	case st.w = <-got:
	case <-time.After(wait):
		if r, err := os.OpenFile(st.path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			r.Close() // lets the open above return
		}
		t.Fatalf("no one read /proc/%d/stat", st.pid)
	}
	if st.w == nil {
		t.FailNow() // the error is reported
	}
	st.s.writers = append(st.s.writers, st.w)
	return st
}

// answer writes the stat line (parent ppid) to the reader waiting and
// ends it; from then on the stat is a plain file that answers at once.
func (st slowStat) answer(ppid int) {
	t := st.s.t
	t.Helper()
	line := fmt.Sprintf("%d (agent) S %d 1 1 0 -1 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", st.pid, ppid)
	_, err := st.w.WriteString(line)
	if cerr := st.w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	tmp := st.path + ".new"
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, st.path); err != nil {
		t.Fatal(err)
	}
}
