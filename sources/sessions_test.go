package sources

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// twoHarness maps lines "<harness> <session> <kind>" to events: a source
// reporting two harnesses from one tree.
type twoHarness struct {
	*Sessions
	rescans *atomic.Int32
}

func (h twoHarness) Line(_ string, line []byte) {
	f := strings.Fields(string(line))
	if len(f) != 3 {
		h.BadLine(CodeInvalidRecord)
		return
	}
	var e agentbridge.Event
	switch f[2] {
	case "start":
		e = agentbridge.Event{Kind: agentbridge.KindSessionStarted}
	case "turn":
		e = agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}
	default:
		h.BadLine(CodeInvalidRecord)
		return
	}
	h.Event(f[1], f[0], e)
}
func (h twoHarness) Truncated(string) {}
func (h twoHarness) Removed(string)   {}
func (h twoHarness) Rescan()          { h.rescans.Add(1); h.Sessions.Rescan() }

func ids(h *sourcestest.Hub) []string {
	var out []string
	for _, s := range h.Snapshots() {
		out = append(out, s.Harness+"/"+s.ID)
	}
	return out
}

// TestFollowHarnessSwitch: a switch that keeps the roots re-sends a reset
// of the enabled harnesses without reading the files again; sessions of a
// switched-off harness are not published, yet come back when it is on.
func TestFollowHarnessSwitch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "all.jsonl")
	if err := os.WriteFile(p, []byte("a s1 start\nb s2 start\nbogus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := sourcestest.New()
	changes := make(chan []string)
	var rescans atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, hub.Start{Enabled: []string{"a", "b"}, Changes: changes, Publisher: h},
			FollowConfig{
				Tail:     TailConfig{Roots: []string{dir}},
				RootsFor: func([]string) []string { return []string{dir} }, // one tree for both
			},
			func(ss *Sessions) Handler { return twoHarness{ss, &rescans} })
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Follow did not return")
		}
	}()
	h.WaitFor(t, "both sessions", func(h *sourcestest.Hub) bool { return slices.Equal(ids(h), []string{"a/s1", "b/s2"}) })
	h.WaitFor(t, "the bad line's diagnostic", func(h *sourcestest.Hub) bool {
		return slices.ContainsFunc(h.Diagnostics(), func(d agentbridge.Diagnostic) bool { return d.Code == CodeInvalidRecord })
	})

	changes <- []string{"a"}
	h.WaitFor(t, "a reset with a only", func(h *sourcestest.Hub) bool { return h.Resets() == 2 && slices.Equal(ids(h), []string{"a/s1"}) })
	// b's session changes while b is off: folded, not published.
	sourcestest.Append(t, p, "b s2 turn\na s1 turn\n")
	h.WaitFor(t, "a's turn", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot("s1")
		return ok && s.Status == agentbridge.StatusRunning
	})
	if _, ok := h.Snapshot("s2"); ok {
		t.Errorf("a session of a switched-off harness was published")
	}
	changes <- []string{"a", "b"}
	h.WaitFor(t, "b back, with its turn", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot("s2")
		return h.Resets() == 3 && ok && s.Status == agentbridge.StatusRunning
	})
	if n := rescans.Load(); n != 1 {
		t.Errorf("files were scanned %d times, want 1 (switches keep the roots)", n)
	}
	if n := h.Refused(); n > 0 {
		t.Errorf("the hub refused %d calls", n)
	}
}
