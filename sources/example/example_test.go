package example

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/sources"
	journals "github.com/agentbridge/agentbridge/sources/example/demo"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// run starts the source on home with a fake hub until the test ends and
// returns the hub and the channel that switches harnesses.
func run(t *testing.T, cfg Config) (*sourcestest.Hub, chan<- []string) {
	t.Helper()
	changes := make(chan []string)
	return sourcestest.RunStart(t, New(cfg), hub.Start{Enabled: []string{Harness}, Changes: changes}), changes
}

func goldenSnapshot(t *testing.T, stem string) agentbridge.Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", stem+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g sourcestest.LineGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g.Snapshot
}

func has(h *sourcestest.Hub, id string, cond func(agentbridge.Snapshot) bool) bool {
	s, ok := h.Shown(id)
	return ok && cond(s)
}

func hasDiag(h *sourcestest.Hub, code string) bool {
	return slices.ContainsFunc(h.Diagnostics(), func(d agentbridge.Diagnostic) bool { return d.Code == code })
}

// TestSourceFollowsJournals runs the source over the bundled journals and
// then changes them the way an agent and a user do.
func TestSourceFollowsJournals(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := SessionsDir(home)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names, _ := fs.ReadDir(journals.Journals, ".")
	var stems []string
	for _, n := range names {
		if !strings.HasSuffix(n.Name(), ".jsonl") {
			continue
		}
		b, _ := fs.ReadFile(journals.Journals, n.Name())
		sourcestest.Append(t, filepath.Join(dir, n.Name()), string(b))
		stems = append(stems, strings.TrimSuffix(n.Name(), ".jsonl"))
	}
	h, changes := run(t, Config{Home: home, Linger: -1})

	// The scan ends in one reset holding every session as the golden
	// files say, with no event published before it.
	h.WaitFor(t, "the first reset", func(h *sourcestest.Hub) bool { return h.Resets() == 1 })
	if c := h.Calls(); c[0].Op != agentbridge.OpReset {
		t.Errorf("first call %v, want the reset", c[0].Op)
	}
	var want []agentbridge.Snapshot
	for _, s := range stems {
		want = append(want, goldenSnapshot(t, s))
	}
	if diff := cmp.Diff(want, h.Snapshots()); diff != "" {
		t.Fatalf("snapshots after the scan (-want +got):\n%s", diff)
	}

	steps := []struct {
		name string
		act  func()
		done func(h *sourcestest.Hub) bool
	}{
		{"a new turn is published as it is written", func() {
			sourcestest.Append(t, filepath.Join(dir, "0b1e7c52-refactor.jsonl"), `{"type":"prompt","turnId":"turn-2","text":"And the docs?"}`+"\n")
		}, func(h *sourcestest.Hub) bool {
			return has(h, "0b1e7c52-refactor", func(s agentbridge.Snapshot) bool { return s.Status == agentbridge.StatusRunning })
		}},
		{"a record split across two writes counts once", func() {
			p := filepath.Join(dir, "0b1e7c52-refactor.jsonl")
			sourcestest.Append(t, p, `{"type":"complete","ok":tr`)
			sourcestest.Append(t, p, `ue}`+"\n")
		}, func(h *sourcestest.Hub) bool {
			return has(h, "0b1e7c52-refactor", func(s agentbridge.Snapshot) bool { return s.Status == sourcestest.StatusDone })
		}},
		{"a rewritten journal rebuilds its session", func() {
			p := filepath.Join(dir, "4d2f9a11-approval.jsonl")
			tmp := p + ".tmp"
			sourcestest.Append(t, tmp, `{"type":"session","title":"Rewritten"}`+"\n")
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}, func(h *sourcestest.Hub) bool {
			return has(h, "4d2f9a11-approval", func(s agentbridge.Snapshot) bool {
				return s.Title == "Rewritten" && s.Status == agentbridge.StatusIdle && s.WaitingFor == ""
			})
		}},
		{"a deleted journal stops its session", func() {
			if err := os.Remove(filepath.Join(dir, "c5e80f3a-failure.jsonl")); err != nil {
				t.Fatal(err)
			}
		}, func(h *sourcestest.Hub) bool { _, ok := h.Shown("c5e80f3a-failure"); return !ok }},
		{"lines that are not JSON, or lack ids, are skipped with diagnostics", func() {
			sourcestest.Append(t, filepath.Join(dir, "9a7c3e05-subagents.jsonl"), "not json\n"+`{"type":"prompt"}`+"\n"+`{"type":"prompt","turnId":"turn-2"}`+"\n")
		}, func(h *sourcestest.Hub) bool {
			return hasDiag(h, sources.CodeInvalidJSON) && hasDiag(h, sources.CodeInvalidRecord) &&
				has(h, "9a7c3e05-subagents", func(s agentbridge.Snapshot) bool { return s.Status == agentbridge.StatusRunning })
		}},
		{"an event the fold rejects is dropped with a diagnostic", func() {
			sourcestest.Append(t, filepath.Join(dir, "9a7c3e05-subagents.jsonl"), `{"type":"approval_resolved","requestId":"never-opened"}`+"\n")
		}, func(h *sourcestest.Hub) bool { return hasDiag(h, sources.CodeInvalidEvent) }},
		{"binary junk changes nothing but gives a diagnostic", func() {
			// (Over-long lines: the tailer's tests, with 10 MiB lines.)
			p := filepath.Join(dir, "e81d4b77-exit.jsonl")
			sourcestest.Append(t, p, "\x00\xff\xfe junk \x80\n\x01\x02\x03\n")
		}, func(h *sourcestest.Hub) bool {
			return hasDiag(h, sources.CodeInvalidUTF8) && hasDiag(h, sources.CodeInvalidJSON) &&
				func() bool {
					s, ok := h.Snapshot("e81d4b77-exit")
					return ok && cmp.Equal(s, goldenSnapshot(t, "e81d4b77-exit"))
				}()
		}},
		{"a truncated journal starts its session over", func() {
			p := filepath.Join(dir, "e81d4b77-exit.jsonl")
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
			sourcestest.Append(t, p, `{"type":"session","title":"Again"}`+"\n"+`{"type":"prompt","turnId":"t9"}`+"\n")
		}, func(h *sourcestest.Hub) bool {
			return has(h, "e81d4b77-exit", func(s agentbridge.Snapshot) bool {
				return s.Title == "Again" && s.Status == agentbridge.StatusRunning && s.LastTurn == ""
			})
		}},
		{"switching the harness off resets to nothing", func() { changes <- []string{} }, func(h *sourcestest.Hub) bool {
			return h.Resets() == 2 && len(h.Snapshots()) == 0
		}},
		{"switching it on reports the sessions again", func() { changes <- []string{Harness} }, func(h *sourcestest.Hub) bool {
			return h.Resets() == 3 && len(h.Snapshots()) == 4
		}},
	}
	for _, s := range steps {
		s.act()
		h.WaitFor(t, s.name, s.done)
	}
	for _, d := range h.Diagnostics() {
		if strings.Contains(d.Message, home) || strings.Contains(d.Message, "never-opened") {
			t.Errorf("diagnostic %q leaks a path or content", d.Message)
		}
	}
}

func startChild(t *testing.T, stdin *os.File) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.Stdin = stdin
	if err := cmd.Start(); err != nil {
		testenv.Missing(t, "cannot start a child process: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// TestSourceProcessExit binds sessions to processes (by the pid in the
// session record, or by the process holding the journal open) and reports
// their exit, then stops them after the linger. It runs alone: a child
// forked by another test holds every open file of the test process for a
// moment (until its exec), which would make a journal look held by two
// processes.
func TestSourceProcessExit(t *testing.T) {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	tests := []struct {
		name   string
		before bool // journal written before the source starts (found by the scan)
		record func(pid int) string
		hold   bool // the child holds the journal open
	}{
		{"pid in the record, live", false, func(pid int) string {
			return fmt.Sprintf(`{"type":"session","ts":%q,"pid":%d}`, now, pid)
		}, false},
		{"pid in the record, at the scan", true, func(pid int) string {
			return fmt.Sprintf(`{"type":"session","ts":%q,"pid":%d}`, now, pid)
		}, false},
		{"holder of the journal, live", false, func(int) string { return `{"type":"session"}` }, true},
		{"holder of the journal, at the scan", true, func(int) string { return `{"type":"session"}` }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			dir := SessionsDir(home)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "s1.jsonl")
			sourcestest.Append(t, p, "")
			var stdin *os.File
			if tt.hold {
				// The agent appends to its journal: a holder counts only
				// when it holds the journal open for writing.
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				stdin = f
			}
			child := startChild(t, stdin)
			if tt.before {
				sourcestest.Append(t, p, tt.record(child.Process.Pid)+"\n")
			}
			h, _ := run(t, Config{Home: home, Linger: 200 * time.Millisecond})
			if !tt.before {
				sourcestest.Append(t, p, tt.record(child.Process.Pid)+"\n")
			}
			// Bound means the snapshot shows the child's pid, however it
			// was found; only then does killing it test the exit watch.
			h.WaitFor(t, "the session bound to the child", func(h *sourcestest.Hub) bool {
				return has(h, "s1", func(s agentbridge.Snapshot) bool {
					return s.Status == agentbridge.StatusIdle && s.PID == child.Process.Pid
				})
			})
			_ = child.Process.Kill()
			h.WaitFor(t, "agent.exited", func(h *sourcestest.Hub) bool {
				return slices.ContainsFunc(h.Calls(), func(c sourcestest.Call) bool { return c.Event.Kind == agentbridge.KindAgentExited })
			})
			h.WaitFor(t, "the session to stop after the linger", func(h *sourcestest.Hub) bool { _, ok := h.Shown("s1"); return !ok })
		})
	}
}

// TestSourcePidReuse: the pid in the record names a process that started
// well after the session did, so it is not the agent: the session exits.
func TestSourcePidReuse(t *testing.T) {
	home := t.TempDir()
	dir := SessionsDir(home)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	child := startChild(t, nil)
	h, _ := run(t, Config{Home: home, Linger: -1})
	long := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	sourcestest.Append(t, filepath.Join(dir, "s1.jsonl"), fmt.Sprintf(`{"type":"session","ts":%q,"pid":%d}`+"\n", long, child.Process.Pid))
	h.WaitFor(t, "the session to exit", func(h *sourcestest.Hub) bool {
		return has(h, "s1", func(s agentbridge.Snapshot) bool { return s.Status == sourcestest.StatusExited })
	})
}

// TestSourceInactiveSessionLeavesAndReturns: a session with no process
// whose journal is not written for the window leaves the hub; written
// again, it comes back whole (title from its first record included).
func TestSourceInactiveSessionLeavesAndReturns(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := SessionsDir(home)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h, _ := run(t, Config{Home: home, Window: 300 * time.Millisecond})
	p := filepath.Join(dir, "quiet.jsonl")
	sourcestest.Append(t, p, `{"type":"session","title":"Quiet"}`+"\n"+`{"type":"prompt","turnId":"t1"}`+"\n")
	h.WaitFor(t, "the session", func(h *sourcestest.Hub) bool {
		return has(h, "quiet", func(s agentbridge.Snapshot) bool { return s.Status == agentbridge.StatusRunning })
	})
	h.WaitFor(t, "the session to leave", func(h *sourcestest.Hub) bool { _, ok := h.Shown("quiet"); return !ok })
	sourcestest.Append(t, p, `{"type":"complete","ok":true}`+"\n")
	h.WaitFor(t, "the session to return whole", func(h *sourcestest.Hub) bool {
		return has(h, "quiet", func(s agentbridge.Snapshot) bool {
			return s.Title == "Quiet" && s.Status == sourcestest.StatusDone
		})
	})
}
