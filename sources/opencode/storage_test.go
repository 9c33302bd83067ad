package opencode

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// copyTree copies a testdata tree into dst (the copies are new: written
// within any window).
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

// storageRecords decodes every object file under root and orders them as
// the scan does.
func storageRecords(t *testing.T, root string) []Record {
	t.Helper()
	var recs []Record
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		kind := storageKind(root, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r, ok := DecodeStorage(kind, data)
		if !ok {
			t.Errorf("%s: not decoded", p)
			return nil
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	orderStorage(recs)
	return recs
}

// TestStorage maps the file storage of an older install: the session, its
// model, and the subagent under it, with the subagent's running tool not
// shown as a tool of the root.
func TestStorage(t *testing.T) {
	m := NewMapper(nil)
	var got []Out
	for _, r := range storageRecords(t, "testdata/storage") {
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

// TestStorageLive: an object file written while the source runs is read
// whole: a new turn in the stored session shows as running, and a
// session file removed stops its session.
func TestStorageLive(t *testing.T) {
	home := t.TempDir()
	copyTree(t, "testdata/storage", filepath.Join(home, "storage"))
	// The stored session's process is long gone (it lingers: Linger -1),
	// and a new one takes it up with the new message.
	h := sourcestest.Start(t, New(sources.Options{Home: home, Linger: -1, Processes: running(t)}), nil)
	h.WaitFor(t, "the stored session", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot("s_stage0_small")
		return ok && len(s.Subagents) == 1
	})
	msg := filepath.Join(home, "storage", "message", "s_stage0_small", "msg_0009.json")
	if err := os.WriteFile(msg, []byte(`{"id":"m_user_9","sessionID":"s_stage0_small","role":"user","time":{"created":`+strconv.FormatInt(time.Now().UnixMilli(), 10)+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the new turn running", status("s_stage0_small", agentbridge.StatusRunning))
	if err := os.Remove(filepath.Join(home, "storage", "session", "proj_test", "ses_s_stage0_small.json")); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the session gone with its file", func(h *sourcestest.Hub) bool {
		_, ok := h.Snapshot("s_stage0_small")
		return !ok
	})
}

// TestHome: the source reads the file storage, the main database and a
// channel database of one home, and never opens a FIFO in a database's
// place.
func TestHome(t *testing.T) {
	home := t.TempDir()
	copyTree(t, "testdata/storage", filepath.Join(home, "storage"))
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
	h := sourcestest.Start(t, New(sources.Options{Home: home, Window: -1, Linger: -1}), nil) // the fixtures are older than any window; their processes are gone
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
