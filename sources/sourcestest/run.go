package sourcestest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/hub"
)

// Start runs src (see Run) and waits for its first reset.
func Start(t testing.TB, src hub.Source, enabled []string) *Hub {
	t.Helper()
	h := Run(t, src, enabled)
	h.WaitFor(t, "the first reset", func(h *Hub) bool { return h.Resets() > 0 })
	return h
}

// Run runs src with the harnesses in enabled switched on (all of the
// source's when nil) against a new Hub and returns the Hub. When the test
// ends the source is stopped, and the test fails if Run returned an
// error, did not return, or the hub refused any of its calls.
func Run(t testing.TB, src hub.Source, enabled []string) *Hub {
	t.Helper()
	if enabled == nil {
		for _, h := range src.Info().Harnesses {
			enabled = append(enabled, h.ID)
		}
	}
	return RunStart(t, src, hub.Start{Enabled: enabled})
}

// RunStart is Run with the hub.Start the source gets (its Enabled and
// Changes; the Publisher is the new Hub).
func RunStart(t testing.TB, src hub.Source, st hub.Start) *Hub {
	t.Helper()
	h := New()
	st.Publisher = h
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, st) }()
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
	return h
}

// Append appends s to the file at path, making it and its directories as
// needed, in one write.
func Append(t testing.TB, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
