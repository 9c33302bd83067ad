package answer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T, ws *Waits, session, call string) *Wait {
	t.Helper()
	w, err := ws.Open("claude-code", session, call, "Bash", "make deploy", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// closedWith returns the verdict a closed wait delivered.
func closedWith(t *testing.T, w *Wait) Verdict {
	t.Helper()
	select {
	case v := <-w.Done():
		return v
	default:
		t.Fatal("the wait is still open")
		return Verdict{}
	}
}

func TestWaitCloses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		close func(ws *Waits, w *Wait) error
		want  Verdict
		state string
	}{
		{"allow", func(ws *Waits, w *Wait) error {
			return ws.Answer("claude-code", "s1", w.ID(), Verdict{Decision: Allow})
		},
			Verdict{Decision: Allow}, StateAnswered},
		{"deny", func(ws *Waits, w *Wait) error {
			return ws.Answer("claude-code", "s1", w.ID(), Verdict{Decision: Deny, Message: "no"})
		}, Verdict{Decision: Deny, Message: "no"}, StateAnswered},
		{"its call's later hook", func(ws *Waits, w *Wait) error { ws.Settle("claude-code", "s1", "k1"); return nil },
			Verdict{Decision: None}, StateAtTerminal},
		{"the turn's end", func(ws *Waits, w *Wait) error { ws.Settle("claude-code", "s1", ""); return nil },
			Verdict{Decision: None}, StateAtTerminal},
		{"its hook leaving", func(ws *Waits, w *Wait) error { w.Leave(); return nil }, Verdict{Decision: None}, StateGone},
		{"the bridge stopping", func(ws *Waits, w *Wait) error { ws.Close(); return nil }, Verdict{Decision: None}, StateGone},
		{"the session ending", func(ws *Waits, w *Wait) error { ws.End("claude-code", "s1"); return nil }, Verdict{Decision: None}, StateGone},
		{"a newer prompt", func(ws *Waits, w *Wait) error {
			_, err := ws.Open("claude-code", "s1", "k2", "", "", time.Minute)
			return err
		},
			Verdict{Decision: None}, StateSuperseded},
	} {
		ws := New()
		w := open(t, ws, "s1", "k1")
		if ws.Answerable("claude-code", "s1") == nil {
			t.Fatalf("%s: an open wait is not answerable", tt.name)
		}
		if err := tt.close(ws, w); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if v := closedWith(t, w); v != tt.want {
			t.Errorf("%s: verdict %+v, want %+v", tt.name, v, tt.want)
		}
		// an answer now: refused with the state, never a second verdict
		err := ws.Answer("claude-code", "s1", w.ID(), Verdict{Decision: Allow})
		var c *Conflict
		if !errors.As(err, &c) || c.State != tt.state {
			t.Errorf("%s: a late answer: %v, want a conflict in state %s", tt.name, err, tt.state)
		}
		select {
		case v := <-w.Done():
			t.Errorf("%s: a second verdict %+v", tt.name, v)
		default:
		}
	}
}

func TestSettleOnlyItsCall(t *testing.T) {
	t.Parallel()
	ws := New()
	w := open(t, ws, "s1", "k1")
	if ws.Settle("claude-code", "s1", "k-other") || ws.Settle("claude-code", "s2", "") || ws.Settle("codex", "s1", "") {
		t.Fatal("another call, session or source settled the wait")
	}
	if ws.Answerable("claude-code", "s1") == nil {
		t.Fatal("the wait was closed")
	}
	// answers name the session as well as the wait
	var c *Conflict
	if err := ws.Answer("claude-code", "s2", w.ID(), Verdict{Decision: Allow}); !errors.Is(err, ErrNoWait) {
		t.Errorf("the wait through another session: %v", err)
	}
	if err := ws.Answer("claude-code", "s1", "wnope", Verdict{Decision: Allow}); !errors.As(err, &c) || c.Current == nil || c.Current.WaitID != w.ID() {
		t.Errorf("another wait id: %v", err)
	}
	if err := ws.Answer("claude-code", "s1", w.ID(), Verdict{Decision: "always"}); err == nil {
		t.Error("a decision that is neither allow nor deny was taken")
	}
}

func TestClosedRefusesNewWaits(t *testing.T) {
	t.Parallel()
	ws := New()
	ws.Close()
	if _, err := ws.Open("claude-code", "s1", "k", "", "", time.Minute); !errors.Is(err, ErrClosed) {
		t.Errorf("open after close: %v", err)
	}
}

func TestRecentIsBounded(t *testing.T) {
	t.Parallel()
	ws := New()
	first := open(t, ws, "s0", "k")
	first.Leave()
	for range maxRecent + 10 {
		open(t, ws, "s1", "k").Leave()
	}
	if len(ws.recent) != maxRecent || len(ws.order) != maxRecent {
		t.Fatalf("%d closed waits remembered, want %d", len(ws.recent), maxRecent)
	}
	if err := ws.Answer("claude-code", "s0", first.ID(), Verdict{Decision: Allow}); !errors.Is(err, ErrNoWait) {
		t.Errorf("a forgotten wait: %v", err)
	}
}

func TestAuditRotates(t *testing.T) {
	t.Parallel()
	// its directory is made (mode 0700) when it is not there yet
	path := filepath.Join(t.TempDir(), "state", "answers.jsonl")
	a := &Audit{Path: path, Max: 600}
	for i := range 10 {
		if err := a.Write(Record{Source: "claude-code", SessionID: "s1", WaitID: "w" + strings.Repeat("0", i), Decision: Allow, Result: ResultAccepted}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{path, path + ".1"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > a.Max {
			t.Errorf("%s is %d bytes, over %d", filepath.Base(f), fi.Size(), a.Max)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", filepath.Base(f), fi.Mode().Perm())
		}
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"waitId":"w000000000"`) {
		t.Errorf("the latest record is not in the log: %s", b)
	}
}

// TestLink: an open wait's link names it, and only while it is open.
func TestLink(t *testing.T) {
	t.Parallel()
	ws := New()
	w := open(t, ws, "s1", "k1")
	link := ws.Link("claude-code", "s1")
	if len(link) != 64 || ws.Link("claude-code", "s2") != "" {
		t.Fatalf("links %q %q", link, ws.Link("claude-code", "s2"))
	}
	if src, sess, a, ok := ws.Linked(link); !ok || src != "claude-code" || sess != "s1" || a.WaitID != w.ID() {
		t.Errorf("Linked: %s %s %+v %v", src, sess, a, ok)
	}
	if _, _, _, ok := ws.Linked(link[:63] + "x"); ok {
		t.Error("another secret names the wait")
	}
	next := open(t, ws, "s1", "k2") // a newer prompt: the old link is dead
	if _, _, _, ok := ws.Linked(link); ok {
		t.Error("a replaced wait's link still names it")
	}
	if ws.Link("claude-code", "s1") == link {
		t.Error("the newer wait has the same link")
	}
	next.Leave()
	if _, _, _, ok := ws.Linked(ws.Link("claude-code", "s1")); ok || ws.Link("claude-code", "s1") != "" {
		t.Error("a closed wait keeps its link")
	}
}
