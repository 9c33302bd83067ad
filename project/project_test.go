package project

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/internal/testenv"
)

// layout builds a tree of directories and files under a fresh temporary
// directory (symbolic links resolved, so that expectations are exact). A key
// ending in "/" is a directory; "->" in a value makes a symbolic link. Values
// may name the base as {base}.
func layout(t testing.TB, files map[string]string) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(base, name)
		content = strings.ReplaceAll(content, "{base}", base)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

// gitTree is a main worktree (repo) with linked worktrees made the way git
// makes them (absolute and relative gitdir lines), a submodule, a second
// repository with its own worktree, a bare repository with two worktrees,
// and some broken .git files.
var gitTree = map[string]string{
	"repo/.git/HEAD":                     "ref: refs/heads/main\n",
	"repo/.git/worktrees/feat/commondir": "../..\n",
	"repo/.git/worktrees/feat/gitdir":    "{base}/wt/feat/.git\n",
	"repo/.git/worktrees/rel/commondir":  "../..\r\n",
	"repo/.git/worktrees/abs/commondir":  "{base}/repo/.git\n",
	"repo/.git/modules/sub/HEAD":         "ref: refs/heads/main\n",
	"repo/pkg/a/":                        "",
	"repo/docs/":                         "",
	"repo/sub/.git":                      "gitdir: ../.git/modules/sub\n",
	"repo/sub/x/":                        "",
	"wt/feat/.git":                       "gitdir: {base}/repo/.git/worktrees/feat\n",
	"wt/feat/pkg/a/deep/":                "",
	"wt/feat/docs/":                      "",
	"wt/rel/.git":                        "gitdir: ../../repo/.git/worktrees/rel",
	"wt/rel/src/":                        "",
	"wt/abs/.git":                        "gitdir: {base}/repo/.git/worktrees/abs\n",
	"other/.git/worktrees/o/commondir":   "../..\n",
	"other/src/":                         "",
	"wt/other/.git":                      "gitdir: {base}/other/.git/worktrees/o\n",
	"bare.git/HEAD":                      "ref: refs/heads/main\n",
	"bare.git/worktrees/b1/commondir":    "../..\n",
	"bare.git/worktrees/b2/commondir":    "../..\n",
	"wt/b1/.git":                         "gitdir: {base}/bare.git/worktrees/b1\n",
	"wt/b2/.git":                         "gitdir: {base}/bare.git/worktrees/b2\n",
	"wt/b2/cmd/":                         "",
	"broken/nonsense/.git":               "this is not a gitdir line\n",
	"broken/missing/.git":                "gitdir: {base}/repo/.git/worktrees/gone\n",
	"broken/empty/.git":                  "",
	"plain/a/":                           "",
	"plain/ab/":                          "",
	"links/repo":                         "->{base}/repo",
	"links/feat":                         "->{base}/wt/feat",
}

func TestContains(t *testing.T) {
	base := layout(t, gitTree)
	tests := []struct {
		name      string
		root, cwd string // relative to base unless absolute
		want      bool
	}{
		{"root itself", "repo", "repo", true},
		{"below root", "repo", "repo/pkg/a", true},
		{"below root, not a repository", "plain", "plain/a", true},
		{"below root, directory gone", "plain", "plain/a/gone/deeper", true},
		{"sibling sharing a name prefix", "plain/a", "plain/ab", false},
		{"parent of root", "repo/pkg", "repo", false},
		{"filesystem root", "/", "repo/pkg", true},
		{"linked worktree of the main worktree", "repo", "wt/feat", true},
		{"deep in a linked worktree", "repo", "wt/feat/pkg/a/deep", true},
		{"main worktree from a linked one", "wt/feat", "repo/docs", true},
		{"between two linked worktrees", "wt/feat", "wt/rel/src", true},
		{"relative gitdir line, CRLF commondir", "repo", "wt/rel/src", true},
		{"absolute commondir", "repo", "wt/abs", true},
		{"same place in another worktree", "repo/pkg", "wt/feat/pkg/a/deep", true},
		{"elsewhere in another worktree", "repo/pkg", "wt/feat/docs", false},
		{"top of another worktree for a subdirectory root", "repo/pkg", "wt/feat", false},
		{"worktree of another repository", "repo", "wt/other", false},
		{"another repository", "repo", "other/src", false},
		{"submodule is lexically inside", "repo", "repo/sub/x", true},
		{"submodule is another repository", "wt/feat", "repo/sub/x", false},
		{"worktrees of a bare repository", "wt/b1", "wt/b2/cmd", true},
		{"bare and normal repositories differ", "repo", "wt/b1", false},
		{"malformed .git file", "repo", "broken/nonsense", false},
		{"gitdir that is gone", "repo", "broken/missing", false},
		{"empty .git file", "repo", "broken/empty", false},
		{"cwd that does not exist", "repo", "wt/nowhere/x", false},
		{"root through a symbolic link", "links/repo", "repo/docs", true},
		{"cwd through a symbolic link", "repo", "links/repo/docs", true},
		{"linked worktree through a symbolic link", "repo", "links/feat/docs", true},
		{"relative root", "relative/root", "/x", false},
		{"relative cwd", "/", "relative", false},
		{"unclean cwd", "repo", "repo/pkg/../docs", false},
		{"trailing slash", "repo", "repo/docs/", false},
		{"empty cwd", "repo", "", false},
		{"NUL in cwd", "repo", "repo/a\x00b", false},
	}
	// Paths are relative to base, joined without cleaning so that unclean
	// forms stay unclean; "", absolute and "relative…" paths are kept as is.
	abs := func(p string) string {
		if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "relative") {
			return p
		}
		return base + "/" + p
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, cwd := abs(tt.root), abs(tt.cwd)
			if got := Contains(root, cwd); got != tt.want {
				t.Errorf("Contains(%q, %q) = %v, want %v", root, cwd, got, tt.want)
			}
		})
	}
}

// TestContainsSeesNewWorktree checks that nothing is cached: a worktree made
// after a first answer is recognised at once.
func TestContainsSeesNewWorktree(t *testing.T) {
	base := layout(t, map[string]string{
		"repo/.git/HEAD": "ref: refs/heads/main\n",
		"wt/new/src/":    "",
	})
	root, cwd := filepath.Join(base, "repo"), filepath.Join(base, "wt/new/src")
	if Contains(root, cwd) {
		t.Fatal("before the worktree exists: want false")
	}
	layout2 := map[string]string{
		"repo/.git/worktrees/new/commondir": "../..\n",
		"wt/new/.git":                       "gitdir: " + base + "/repo/.git/worktrees/new\n",
	}
	for name, content := range layout2 {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !Contains(root, cwd) {
		t.Fatal("after the worktree is made: want true")
	}
}

func FuzzContainsPaths(f *testing.F) {
	for _, s := range [][2]string{
		{"/", "/"}, {"/a", "/a/b"}, {"/a", "/ab"}, {"/a/", "/a/b"}, {"a", "/a"},
		{"/a/./b", "/a/b"}, {"/a", "/a\x00"}, {"/x/y", "/x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, root, cwd string) {
		got := Contains(root, cwd)
		if got && (!valid(root) || !valid(cwd)) {
			t.Fatalf("Contains(%q, %q) = true for an invalid path", root, cwd)
		}
		if valid(root) && valid(cwd) && (cwd == root || strings.HasPrefix(cwd, strings.TrimSuffix(root, "/")+"/")) && !got {
			t.Fatalf("Contains(%q, %q) = false for a path below the root", root, cwd)
		}
	})
}

// FuzzGitFile feeds arbitrary .git and commondir contents: Contains must not
// panic, and a worktree whose files do not lead to repo's .git is not part
// of it.
func FuzzGitFile(f *testing.F) {
	f.Add("gitdir: ../../repo/.git/worktrees/w\n", "../..\n")
	f.Add("gitdir: /nonexistent\n", "../..")
	f.Add("gitdir:", "")
	f.Add("gitdir: ../../repo/.git/worktrees/w", "/")
	f.Add("\x00\n", "\x00")
	f.Fuzz(func(t *testing.T, dotgit, commondir string) {
		base := layout(t, map[string]string{
			"repo/.git/HEAD":                  "ref: refs/heads/main\n",
			"repo/.git/worktrees/w/commondir": commondir,
			"wt/w/.git":                       dotgit,
		})
		got := Contains(filepath.Join(base, "repo"), filepath.Join(base, "wt/w"))
		line, _, _ := strings.Cut(dotgit, "\n")
		if got && !strings.HasPrefix(line, "gitdir:") {
			t.Fatalf("true without a gitdir line: %q", dotgit)
		}
	})
}

// TestContainsRealGit checks the layouts above against what git itself
// makes, when a git binary is installed (the package never runs one).
func TestContainsRealGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		testenv.Missing(t, "no git binary")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	repo := filepath.Join(base, "repo")
	git(base, "init", "-q", repo)
	git(repo, "commit", "-q", "--allow-empty", "-m", "first")
	git(repo, "worktree", "add", "-q", filepath.Join(base, "elsewhere", "feature"))
	git(base, "init", "-q", filepath.Join(base, "other"))
	if !Contains(repo, filepath.Join(base, "elsewhere", "feature")) {
		t.Error("a worktree made by git add is not recognised")
	}
	if !Contains(filepath.Join(base, "elsewhere", "feature"), repo) {
		t.Error("the main worktree is not recognised from a linked one")
	}
	if Contains(repo, filepath.Join(base, "other")) {
		t.Error("another repository counted as the same")
	}
}

// BenchmarkContains measures the three paths a filter takes: a cwd below
// the root (lexical, the baseline), one in a linked worktree (reads .git
// files), and one in no repository (walks up to /).
func BenchmarkContains(b *testing.B) {
	base := layout(b, gitTree)
	root := filepath.Join(base, "repo")
	for _, bb := range []struct{ name, cwd string }{
		{"below-root", filepath.Join(base, "repo/pkg/a")},
		{"linked-worktree", filepath.Join(base, "wt/feat/pkg/a/deep")},
		{"no-repository", filepath.Join(base, "plain/a")},
	} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				Contains(root, bb.cwd)
			}
		})
	}
}

// TestRoot: the top of the worktree a directory is in is the nearest
// directory with a .git entry (a directory, or a linked worktree's file);
// none, or a path that is not absolute and clean, is not ok.
func TestRoot(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"repo/.git", "repo/pkg/deep", "wt/sub", "plain/x"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "wt/.git"), []byte("gitdir: /nowhere\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cwd, want string
		ok        bool
	}{
		{filepath.Join(base, "repo"), filepath.Join(base, "repo"), true},
		{filepath.Join(base, "repo/pkg/deep"), filepath.Join(base, "repo"), true},
		{filepath.Join(base, "wt/sub"), filepath.Join(base, "wt"), true},
		{filepath.Join(base, "plain/x"), "", false},
		{"relative/dir", "", false},
		{filepath.Join(base, "repo") + "/../repo", "", false},
	} {
		if got, ok := Root(c.cwd); got != c.want || ok != c.ok {
			t.Errorf("Root(%q) = %q, %v; want %q, %v", c.cwd, got, ok, c.want, c.ok)
		}
	}
}
