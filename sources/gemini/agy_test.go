package gemini

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

// TestAntigravityProcessBinding: an Antigravity conversation is bound to
// the agy process (a fake /proc tree) by the binder's rules. The
// transcript names no directory; history.jsonl pairs a conversation with
// its workspace from its second prompt on, and then the agy process in
// that workspace is its (its name: another program there is not; its
// start time: one started after the transcript's last write is not),
// and the session gets that cwd. An unpaired conversation gets the one
// agy process no other session has, and none while that cannot be told.
// The session ends with its process; a pid reused by another program
// does not take it up; a resumed conversation (agy --continue, a new
// process) is bound again at its next step.
func TestAntigravityProcessBinding(t *testing.T) {
	home := t.TempDir()
	tr := func(conv string) string {
		return filepath.Join(home, "antigravity-cli", "brain", conv, ".system_generated", "logs", "transcript.jsonl")
	}
	step := `{"step_index":0,"source":"USER_EXPLICIT","type":"USER_INPUT","status":"DONE","created_at":"2026-12-01T10:00:00Z","content":"<USER_REQUEST>\ngo\n</USER_REQUEST>"}` + "\n"
	const (
		paired   = "aaaaaaaa-0000-4000-8000-000000000001"
		unpaired = "bbbbbbbb-0000-4000-8000-000000000002"
		late     = "cccccccc-0000-4000-8000-000000000003"
		vim      = "dddddddd-0000-4000-8000-000000000004"
		third    = "eeeeeeee-0000-4000-8000-000000000005"
	)
	sourcestest.Append(t, filepath.Join(home, "antigravity-cli", "history.jsonl"),
		`{"display":"hi","timestamp":1,"workspace":"/w/old"}`+"\n"+
			`{"display":"go","timestamp":2,"workspace":"/w/one","conversationId":"`+paired+`"}`+"\n"+
			`{"display":"go","timestamp":3,"workspace":"/w/late","conversationId":"`+late+`"}`+"\n"+
			`{"display":"go","timestamp":4,"workspace":"/w/vim","conversationId":"`+vim+`"}`+"\n"+
			"not json\n")
	now := time.Now()
	tree := proctest.Fake(t)
	add := func(pid int, exe, cwd string, started time.Time) {
		tree.Add(proctest.Proc{PID: pid, PPID: 1, Exe: exe, Cwd: cwd, Started: started})
	}
	add(10, "/usr/bin/agy", "/w/one", now.Add(-time.Hour))
	add(11, "/usr/bin/agy", "/w/two", now.Add(-time.Hour))
	add(12, "/usr/bin/agy", "/w/late", now.Add(time.Hour))
	add(13, "/usr/bin/vim", "/w/vim", now.Add(-time.Hour))
	for _, c := range []string{paired, unpaired, late, vim} {
		sourcestest.Append(t, tr(c), step)
	}
	h, _ := runOn(t, home, tree, HarnessAntigravity)
	is := sourcestest.StatusPID
	h.WaitFor(t, "the paired conversation on the agy in its workspace", is(paired, agentbridge.StatusRunning, 10))
	if s, _ := h.Snapshot(paired); s.Cwd != "/w/one" {
		t.Errorf("paired cwd %q, want the history's workspace", s.Cwd)
	}
	h.WaitFor(t, "the unpaired one on the free agy", is(unpaired, agentbridge.StatusRunning, 11))
	h.WaitFor(t, "ended: its workspace's agy started after", is(late, sourcestest.StatusExited, 0))
	h.WaitFor(t, "ended: only vim in its workspace", is(vim, sourcestest.StatusExited, 0))

	// A third, unpaired, with every agy taken: not bound, not ended.
	sourcestest.Append(t, tr(third), step)
	h.WaitFor(t, "the third one", is(third, agentbridge.StatusRunning, 0))

	tree.Kill(10)
	h.WaitFor(t, "ended with its process", is(paired, sourcestest.StatusExited, 10))
	add(10, "/usr/bin/bash", "/w/one", time.Now()) // the pid reused
	sourcestest.Append(t, tr(paired), step)
	time.Sleep(100 * time.Millisecond)
	if tree.Watched(10) {
		t.Fatal("taken up by the program that reused its pid")
	}
	add(14, "/usr/bin/agy", "/w/one", time.Now().Add(-time.Second)) // agy --continue
	sourcestest.Append(t, tr(paired), step)
	h.WaitFor(t, "taken up by the resuming agy", is(paired, agentbridge.StatusRunning, 14))
	if s, _ := h.Snapshot(third); s.PID != 0 {
		t.Errorf("the third one bound to %d", s.PID)
	}
}

// TestParseHistory: the latest workspace of each conversation; lines
// without either field, with an unusable id or a relative path, or that
// are not JSON, are skipped.
func TestParseHistory(t *testing.T) {
	got := parseHistory([]byte(`{"conversationId":"c1","workspace":"/a"}
{"conversationId":"c1","workspace":"/b"}
{"conversationId":"c2","workspace":"rel"}
{"conversationId":"bad id","workspace":"/x"}
{"workspace":"/y"}
{"conversationId":"c3"}
{"conversationId":"c4","workspace":"/d",
[1,2]
`))
	if len(got) != 1 || got["c1"] != "/b" {
		t.Errorf("parseHistory = %v, want c1 → /b", got)
	}
}

// FuzzParseHistory: any history.jsonl content gives ids that are identity
// values and workspaces that are absolute, clean paths; never a panic.
func FuzzParseHistory(f *testing.F) {
	f.Add([]byte(`{"conversationId":"c1","workspace":"/a"}` + "\n" + `{"display":"x","workspace":"/b"}`))
	f.Add([]byte(`{"conversationId":"c1","workspace":"/a/../b"}`))
	f.Add([]byte("\n\n{\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for id, ws := range parseHistory(b) {
			if !validate.ValidID(id) || !filepath.IsAbs(ws) || filepath.Clean(ws) != ws {
				t.Fatalf("parseHistory(%q): %q → %q", b, id, ws)
			}
		}
	})
}
