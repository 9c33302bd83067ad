package opencode

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// copyTree copies a testdata tree into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStorage reads the file storage of an older install: the session, its
// model, and the subagent under it, with the subagent's running tool not
// shown as a tool of the root.
func TestStorage(t *testing.T) {
	recs, bad := StorageRecords("testdata/storage", time.Time{})
	if bad != 0 {
		t.Errorf("%d files skipped", bad)
	}
	m := NewMapper()
	var got []Out
	for _, r := range recs {
		got = append(got, m.Apply(r)...)
	}
	want := []Out{
		{"s_stage0_small", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 1730000000000, Title: "OpenCode Small", Cwd: "/tmp/repo"}},
		{"s_stage0_small", agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: "s_stage0_kid", ParentAgentID: "s_stage0_small", Title: "find the tests (@explore subagent)"}},
		{"s_stage0_small", agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Model: "gpt-4o-mini"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("storage events (-want +got):\n%s", diff)
	}
}

// TestHome: the source reads the file storage, the main database and a
// channel database of one home, and never opens a FIFO in a database's
// place.
func TestHome(t *testing.T) {
	home := t.TempDir()
	copyTree(t, "testdata/storage", filepath.Join(home, "storage"))
	now := time.Now()
	filepath.Walk(filepath.Join(home, "storage"), func(p string, _ os.FileInfo, _ error) error { //nolint:errcheck // best effort
		return os.Chtimes(p, now, now)
	})
	for name, fx := range map[string]string{"opencode.db": tuiFixture, "opencode-beta.db": "testdata/cli/run-auto.db"} {
		data, err := os.ReadFile(fx)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(home, "opencode-dev.db"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := sourcestest.Start(t, New(sources.Options{Home: home, Window: -1}), nil) // the fixtures are older than any window
	h.WaitFor(t, "the sessions of both databases and of the storage", func(h *sourcestest.Hub) bool {
		_, a := h.Snapshot(tuiRoot)
		_, b := h.Snapshot("ses_dcee4de59ffeQnBJQnVTI71qLt")
		s, c := h.Snapshot("s_stage0_small")
		return a && b && c && len(s.Subagents) == 1
	})
	var sawUnreadable bool
	for _, d := range h.Diagnostics() {
		sawUnreadable = sawUnreadable || d.Code == CodeUnreadable
	}
	if !sawUnreadable {
		t.Errorf("no diagnostic for the FIFO: %+v", h.Diagnostics())
	}
}
