package codex

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
)

// A subagent spawned with the parent's history (spawn_agent fork_context)
// gets the parent's earlier turns copied into its rollout, their
// task_complete records included. Read from rollouts Codex 0.171.0 and
// 0.165.0 wrote: the forked helper stays running until its own turn ends,
// and the parent's title is its first prompt (an item_completed UserMessage
// since 0.16x; the thread has no name here).
func TestForkedSubagentRunsUntilItsOwnTurnEnds(t *testing.T) {
	for _, c := range []string{"live-0.171-subagents", "live-0.165-subagents"} {
		t.Run(c, func(t *testing.T) {
			dir := filepath.Join("testdata/rollouts", c)
			names := rolloutNames(t, dir)
			var parent, helper string
			for _, n := range names {
				data, err := os.ReadFile(filepath.Join(dir, n))
				if err != nil {
					t.Fatal(err)
				}
				switch first, _, _ := bytes.Cut(data, []byte("\n")); {
				case bytes.Contains(first, []byte(`"forked_from_id"`)):
					helper = n
				case !bytes.Contains(first, []byte(`"parent_thread_id"`)):
					parent = n
				}
			}
			if parent == "" || helper == "" {
				t.Fatalf("no parent or forked helper among %v", names)
			}
			e := NewEngine()
			pubs := replay(t, e, dir, []string{parent})
			data, err := os.ReadFile(filepath.Join(dir, helper))
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
			last := lines[len(lines)-1]
			if !bytes.Contains(last, []byte(`"task_complete"`)) {
				t.Fatalf("the helper's rollout does not end with its task_complete")
			}
			key := keyOf(helper)
			status := func() (agentbridge.SubagentStatus, string) {
				snaps := foldAll(t, pubs)
				if len(snaps) != 1 {
					t.Fatalf("%d sessions, want the parent's only", len(snaps))
				}
				id, _, _ := e.Thread(key)
				for _, sa := range snaps[0].Subagents {
					if sa.ID == id {
						return sa.Status, snaps[0].Title
					}
				}
				return "", snaps[0].Title
			}
			// Each line as if the rollout had been written up to it (the
			// source flushes when the lines run out).
			for i, l := range lines[:len(lines)-1] {
				pubs = append(pubs, e.Line(key, l)...)
				pubs = append(pubs, e.Flush(key)...)
				if st, _ := status(); st != agentbridge.SubagentRunning {
					t.Fatalf("after line %d of the helper's rollout it is %q, want running", i+1, st)
				}
			}
			pubs = append(pubs, e.Line(key, last)...)
			pubs = append(pubs, e.Flush(key)...)
			st, title := status()
			if st != agentbridge.SubagentCompleted || title != "delegate the check" {
				t.Fatalf("at the end: helper %q, parent title %q; want completed, %q", st, title, "delegate the check")
			}
		})
	}
}

func TestReplayedTurn(t *testing.T) {
	const thread = "01a231b7-1f63-7af1-bc8f-8d6940595e11"
	for _, c := range []struct {
		name     string
		subagent bool
		turn     string
		want     bool
	}{
		{"parent turn older than the subagent", true, "01a231b7-1d02-7d63-9d3b-ecddeae7be7a", true},
		{"its own turn", true, "01a231b7-1f80-7c2e-8000-000000000001", false},
		{"created in the same millisecond", true, "01a231b7-1f63-7000-8000-000000000001", false},
		{"upper case", true, "01A231B7-1D02-7D63-9D3B-ECDDEAE7BE7A", true},
		{"a root's rollout", false, "01a231b7-1d02-7d63-9d3b-ecddeae7be7a", false},
		{"no UUIDv7 (v4)", true, "0e7b2f6c-1d02-4d63-9d3b-ecddeae7be7a", false},
		{"not hex", true, "01a231b7-1z02-7d63-9d3b-ecddeae7be7a", false},
		{"no id", true, "", false},
		{"short", true, "01a231b7-1d02-7d63", false},
	} {
		r := NewRollout(0)
		r.meta.ID, r.meta.Subagent = thread, c.subagent
		if got := r.replayed(c.turn); got != c.want {
			t.Errorf("%s: replayed(%q) = %v, want %v", c.name, c.turn, got, c.want)
		}
	}
	r := NewRollout(0)
	r.meta.ID, r.meta.Subagent = "thread-1", true // no UUIDv7 thread id
	if r.replayed("01a231b7-1d02-7d63-9d3b-ecddeae7be7a") {
		t.Error("a thread id that is no UUIDv7 makes no turn replayed")
	}
}
