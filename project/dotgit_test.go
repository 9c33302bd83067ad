package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testenv"
)

// TestContainsHostileDotGit: a .git (or the commondir it leads to) that is
// a FIFO, a symbolic link to a device, a sparse 4 GiB file or a long file
// makes the answer false at once: no wait for a FIFO writer, no read of
// gigabytes. (The old reader opened a FIFO with a blocking open and hung
// forever, one OS thread per filtered request.)
func TestContainsHostileDotGit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		make func(t *testing.T, p string)
	}{
		{"FIFO", func(t *testing.T, p string) { testenv.FIFO(t, p) }},
		{"symlink to a FIFO", func(t *testing.T, p string) { testenv.FIFO(t, p+".fifo"); symlink(t, p+".fifo", p) }},
		{"symlink to /dev/zero", func(t *testing.T, p string) { symlink(t, "/dev/zero", p) }},
		{"sparse 4 GiB", func(t *testing.T, p string) { sparse(t, p, 4<<30) }},
		{"gitdir line past 4 KiB", func(t *testing.T, p string) {
			write(t, p, "gitdir: "+strings.Repeat("a/", 4<<10)+"\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := layout(t, map[string]string{"repo/.git/HEAD": "ref: refs/heads/main\n", "wt/w/sub/": ""})
			tc.make(t, filepath.Join(base, "wt/w/.git"))
			answersFalse(t, func() bool { return Contains(filepath.Join(base, "repo"), filepath.Join(base, "wt/w/sub")) })
			answersFalse(t, func() bool { return Contains(filepath.Join(base, "wt/w/sub"), filepath.Join(base, "repo")) })
		})
	}
	t.Run("commondir FIFO", func(t *testing.T) {
		t.Parallel()
		base := layout(t, map[string]string{
			"repo/.git/HEAD":         "ref: refs/heads/main\n",
			"repo/.git/worktrees/w/": "",
			"wt/w/.git":              "gitdir: ../../repo/.git/worktrees/w\n",
		})
		testenv.FIFO(t, filepath.Join(base, "repo/.git/worktrees/w/commondir"))
		done := make(chan bool, 1)
		go func() { done <- Contains(filepath.Join(base, "repo"), filepath.Join(base, "wt/w")) }()
		select {
		case <-done: // answered (false or true: the worktree's gitdir is still inside repo's .git)
		case <-time.After(time.Minute):
			testenv.Release(filepath.Join(base, "repo/.git/worktrees/w/commondir"))
			t.Fatal("Contains hangs on a commondir that is a FIFO")
		}
	})
}

// answersFalse runs f, which must answer false, and fails when it takes more
// than a few seconds (releasing any FIFO writer wait so the test ends).
func answersFalse(t *testing.T, f func() bool) {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- f() }()
	select {
	case got := <-done:
		if got {
			t.Errorf("Contains = true through a hostile .git")
		}
	case <-time.After(time.Minute):
		t.Fatal("Contains hangs on a hostile .git")
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func sparse(t *testing.T, p string, size int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
