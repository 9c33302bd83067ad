package copilot

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestLockPID(t *testing.T) {
	for name, want := range map[string]int{
		"inuse.123.lock":      123,
		"inuse.4194304.lock":  4194304,
		"inuse.4194305.lock":  0, // above the kernel's limit
		"inuse.0.lock":        0,
		"inuse.-1.lock":       0,
		"inuse.0123.lock":     0, // not canonical
		"inuse..lock":         0,
		"inuse.12.lock.tmp":   0,
		"inuse.12345678.lock": 0,
		"events.jsonl":        0,
		"123.lock":            0,
	} {
		if got := lockPID(name); got != want {
			t.Errorf("lockPID(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestLockPIDs(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"inuse.7.lock", "workspace.yaml", "inuse.x.lock", "events.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := lockPIDs(dir); len(got) != 1 || got[0] != 7 {
		t.Errorf("lockPIDs = %v, want [7]", got)
	}
	if got := lockPIDs(filepath.Join(dir, "missing")); got != nil {
		t.Errorf("lockPIDs of a missing directory = %v", got)
	}
}

func TestPickByCwd(t *testing.T) {
	t0 := time.Date(2026, 8, 5, 15, 0, 0, 0, time.UTC)
	cands := []candidate{
		{pid: 10, cwd: "/a", started: t0.Add(-time.Hour), native: true},
		{pid: 11, cwd: "/a", started: t0.Add(-time.Minute), native: true},
		{pid: 12, cwd: "/a", started: t0.Add(-30 * time.Second)}, // node loader
		{pid: 13, cwd: "/a", started: t0.Add(time.Minute), native: true},
		{pid: 20, cwd: "/b", started: t0.Add(-time.Minute), native: true},
	}
	none := func(int) bool { return false }
	for _, tc := range []struct {
		name  string
		cwd   string
		since time.Time
		taken func(int) bool
		want  int
	}{
		{"the latest native one started before the session", "/a", t0, none, 11},
		{"one started after the session is not it", "/a", t0.Add(30 * time.Second), none, 11},
		{"within the slack", "/a", t0.Add(time.Minute - time.Second), none, 13},
		{"taken ones are skipped", "/a", t0, func(p int) bool { return p == 11 }, 10},
		{"the loader when no native one fits", "/a", t0, func(p int) bool { return p == 10 || p == 11 }, 12},
		{"another cwd", "/b", t0, none, 20},
		{"no process in this cwd", "/c", t0, none, 0},
		{"unknown start: latest", "/a", time.Time{}, none, 13},
	} {
		if got := pickByCwd(cands, tc.cwd, tc.since, tc.taken); got != tc.want {
			t.Errorf("%s: pid %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestCopilotProcesses reads a fake /proc: the native binary and the node
// loader are found, other programs and unreadable entries are not.
func TestCopilotProcesses(t *testing.T) {
	root := t.TempDir()
	stat := func(pid int) string {
		return strconv.Itoa(pid) + " (x) S 1 1 1 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0\n"
	}
	mk := func(pid int, comm, cmdline, cwd string) {
		d := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, s := range map[string]string{"comm": comm + "\n", "cmdline": cmdline, "stat": stat(pid)} {
			if err := os.WriteFile(filepath.Join(d, n), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if cwd != "" {
			if err := os.Symlink(cwd, filepath.Join(d, "cwd")); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk(100, "copilot", "copilot\x00--resume\x00", "/work/a")
	mk(101, "node", "node\x00/usr/lib/node_modules/@github/copilot/index.js\x00", "/work/b")
	mk(102, "node", "node\x00server.js\x00", "/work/c")
	mk(103, "bash", "bash\x00", "/work/a")
	mk(104, "copilot", "copilot\x00", "") // cwd unreadable (another user's)
	// Copilot 1.0.102's native binary (comm as the real CLI shows it), and
	// another program whose main thread has the same name.
	mk(105, "MainThread", "/usr/lib/node_modules/@github/copilot-linux-x64/copilot\x00--resume\x00", "/work/d")
	mk(106, "MainThread", "/usr/bin/electron\x00copilot\x00", "/work/d")
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte("btime 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := copilotProcesses(root)
	pids := map[int]bool{}
	for _, c := range got {
		pids[c.pid] = true
	}
	if len(got) != 3 || !pids[100] || !pids[101] || !pids[105] {
		t.Fatalf("found %+v, want pids 100, 101 and 105", got)
	}
	for _, c := range got {
		if c.pid == 100 && (!c.native || c.cwd != "/work/a") || c.pid == 101 && (c.native || c.cwd != "/work/b") ||
			c.pid == 105 && (!c.native || c.cwd != "/work/d") {
			t.Errorf("candidate %+v", c)
		}
	}
}
