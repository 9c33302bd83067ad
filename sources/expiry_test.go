package sources_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources/claudecode"
	"github.com/agentbridge/agentbridge/sources/example"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestUnboundSessionLeavesAfterWindow: a Claude Code session bound to no
// process (no registry entry) leaves the hub after the window without an
// event, exactly like an example session, and both come back with their
// next line.
func TestUnboundSessionLeavesAfterWindow(t *testing.T) {
	t.Parallel()
	const window = 400 * time.Millisecond
	ccHome, exHome := t.TempDir(), t.TempDir()
	const ccID = "6b6b6b6b-0000-4000-8000-000000000001"
	ccJournal := filepath.Join(ccHome, "projects", "-work-proj", ccID+".jsonl")
	exJournal := filepath.Join(example.SessionsDir(exHome), "s1.jsonl")
	ccLine := func(n int) string {
		return fmt.Sprintf(`{"uuid":"u-%d","sessionId":%q,"cwd":"/work/proj","version":"2.1.200","timestamp":%q,"isSidechain":false,"userType":"external","type":"user","promptId":"p%d","message":{"role":"user","content":"hello"}}`+"\n",
			n, ccID, time.Now().UTC().Format(time.RFC3339Nano), n)
	}
	exLine := func(n int) string {
		ts := time.Now().UTC().Format(time.RFC3339Nano)
		return fmt.Sprintf(`{"type":"prompt","ts":%q,"turnId":"t%d","text":"hello"}`+"\n", ts, n)
	}
	type running struct {
		name, id, journal string
		line              func(int) string
		src               hub.Source
		hub               *sourcestest.Hub
	}
	srcs := []running{
		{"claude-code", ccID, ccJournal, ccLine, claudecode.New(claudecode.Options{Home: ccHome, Window: window}), nil},
		{"example", "s1", exJournal, exLine, example.New(example.Config{Home: exHome, Window: window}), nil},
	}
	for i := range srcs {
		srcs[i].hub = kittest.Run(t, srcs[i].src, srcs[i].src.Info().Harnesses[0].ID)
	}
	for _, r := range srcs {
		r.hub.WaitFor(t, r.name+": started", func(h *sourcestest.Hub) bool { return h.Resets() > 0 })
	}
	for _, r := range srcs {
		wrote := time.Now()
		sourcestest.Append(t, r.journal, r.line(1))
		r.hub.WaitFor(t, r.name+": the session appears", func(h *sourcestest.Hub) bool { _, ok := h.Snapshot(r.id); return ok })
		r.hub.WaitFor(t, r.name+": the session leaves after the window", func(h *sourcestest.Hub) bool { _, ok := h.Snapshot(r.id); return !ok })
		if d := time.Since(wrote); d < window {
			t.Errorf("%s: the session left %v after its last line, before the window (%v)", r.name, d, window)
		}
		sourcestest.Append(t, r.journal, r.line(2))
		r.hub.WaitFor(t, r.name+": back with its next line", func(h *sourcestest.Hub) bool {
			s, ok := h.Snapshot(r.id)
			return ok && s.Title == "hello"
		})
	}
}
