package cursor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestProcessBinding: each Cursor session is bound to the cursor-agent
// process running in its project directory (a fake /proc tree) by the
// binder's rules: the process's name, its cwd, its start time (one
// started after the transcript's last write is not its writer); the
// session ends with its process, a pid reused by another program does
// not take it up, a resumed session (a new cursor-agent) is bound again
// at its next line, and of two processes in one directory a new session
// gets the free one. cursor-agent runs its own Node from
// …/cursor-agent/versions/<v>/: that process is cursor-agent's.
func TestProcessBinding(t *testing.T) {
	home := t.TempDir()
	dirs := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d"} {
		d := filepath.Join(t.TempDir(), n)
		if strings.Contains(d, "-") {
			t.Skip("the temporary directory's name has a dash")
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs[n] = d
	}
	transcript := func(dir, id string) string {
		slug := strings.ReplaceAll(strings.TrimPrefix(dir, "/"), "/", "-")
		return filepath.Join(ProjectsDir(home), slug, "agent-transcripts", id, id+".jsonl")
	}
	const (
		a = "aaaaaaaa-0000-4000-8000-000000000001"
		b = "bbbbbbbb-0000-4000-8000-000000000002"
		c = "cccccccc-0000-4000-8000-000000000003"
		d = "dddddddd-0000-4000-8000-000000000004"
		e = "eeeeeeee-0000-4000-8000-000000000005"
	)
	now := time.Now()
	tree := proctest.Fake(t)
	node := "/home/u/.local/share/cursor-agent/versions/2026.11.20/node"
	add := func(pid int, exe, cwd string, started time.Time) {
		args := []string{exe}
		if exe == node {
			args = []string{exe, "--use-system-ca", filepath.Join(filepath.Dir(node), "index.js")}
		}
		tree.Add(proctest.Proc{PID: pid, PPID: 1, Exe: exe, Comm: filepath.Base(exe), Args: args, Cwd: cwd, Started: started})
	}
	add(10, node, dirs["a"], now.Add(-time.Hour))
	add(11, "/usr/bin/node", dirs["b"], now.Add(-time.Hour)) // some other Node program
	add(12, node, dirs["c"], now.Add(time.Hour))             // started after c's transcript was written
	for id, dir := range map[string]string{a: "a", b: "b", c: "c", d: "d"} {
		sourcestest.Append(t, transcript(dirs[dir], id), prompt)
	}
	h := sourcestest.Start(t, New(sources.Options{Home: home, Linger: -1, Processes: tree}), nil)
	is := sourcestest.StatusPID
	h.WaitFor(t, "a bound to cursor-agent's Node", is(a, agentbridge.StatusRunning, 10))
	h.WaitFor(t, "b ended: another Node program", is(b, sourcestest.StatusExited, 0))
	h.WaitFor(t, "c ended: cursor-agent there started after", is(c, sourcestest.StatusExited, 0))
	h.WaitFor(t, "d ended: no cursor-agent there", is(d, sourcestest.StatusExited, 0))

	tree.Kill(10)
	h.WaitFor(t, "a ended with its process", is(a, sourcestest.StatusExited, 10))

	add(10, "/usr/bin/bash", dirs["a"], time.Now()) // the pid reused
	sourcestest.Append(t, transcript(dirs["a"], a), answer)
	time.Sleep(100 * time.Millisecond)
	if tree.Watched(10) {
		t.Fatal("a taken up by the program that reused its pid")
	}

	add(14, node, dirs["a"], time.Now().Add(-time.Second)) // cursor-agent --resume
	sourcestest.Append(t, transcript(dirs["a"], a), prompt)
	h.WaitFor(t, "a taken up by the resuming process", is(a, agentbridge.StatusRunning, 14))

	add(15, node, dirs["a"], time.Now().Add(-time.Second)) // a second cursor-agent in a
	sourcestest.Append(t, transcript(dirs["a"], e), prompt)
	h.WaitFor(t, "e on the second process", is(e, agentbridge.StatusRunning, 15))
	if s, _ := h.Snapshot(a); s.PID != 14 {
		t.Errorf("a moved to %d", s.PID)
	}
}
