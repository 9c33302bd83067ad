// Package project decides whether a working directory belongs to a project:
// at or below its root, or inside a linked Git worktree of the same
// repository. It reads .git files and commondir itself; no git binary.
package project

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge/internal/smallfile"
	"github.com/agentbridge/agentbridge/validate"
)

// maxGitFile bounds a .git or commondir file; real ones hold one short line,
// and a larger one is not a repository's.
const maxGitFile = 4096

// Contains reports whether cwd is root or below it, or inside a linked
// worktree of the repository whose main worktree (or any worktree) is root.
//
// Both paths must be absolute and clean (as the contract requires of a
// snapshot's cwd); anything else is false. The test is lexical first, then on
// the paths with symbolic links resolved. Failing that, the repository of
// each path is found by walking up to its nearest .git (a directory in the
// main worktree, a "gitdir: …" file in a linked one, whose gitdir names the
// shared repository in its commondir file). When both name the same
// repository, cwd must sit at or below root's place in that worktree: with
// root /repo/pkg, cwd /wt/feature/pkg/x belongs and /wt/feature/docs does
// not. Missing or malformed files make the answer false, never an error.
// Nothing is cached, so a worktree made or removed later is seen at once.
func Contains(root, cwd string) bool {
	if !valid(root) || !valid(cwd) {
		return false
	}
	if within(root, cwd) {
		return true
	}
	realRoot, realCwd := resolve(root), resolve(cwd)
	if (realRoot != root || realCwd != cwd) && within(realRoot, realCwd) {
		return true
	}
	rootRepo, ok := find(realRoot)
	if !ok {
		return false
	}
	cwdRepo, ok := find(realCwd)
	if !ok || rootRepo.common != cwdRepo.common {
		return false
	}
	return within(rootRepo.rel, cwdRepo.rel)
}

// valid reports whether p is an absolute, clean path, by the rule of a
// snapshot's cwd (validate.ValidCwd).
func valid(p string) bool { return validate.ValidCwd(p) }

// within reports whether p is dir or below it; both are clean, and either
// both absolute or both relative to the same top ("." is the top itself).
func within(dir, p string) bool {
	switch {
	case dir == p, dir == ".", dir == "/":
		return true
	default:
		return strings.HasPrefix(p, dir+"/")
	}
}

// resolve returns p with symbolic links resolved, or p itself when that
// fails (the directory may be gone).
func resolve(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return p
	}
	return r
}

// repo is where a path sits in a Git repository.
type repo struct {
	common string // the shared repository directory (main worktree's .git)
	rel    string // the path relative to its worktree's top, "." for the top
}

// Root returns the top of the worktree cwd is in: the nearest directory,
// at or above cwd, with a .git entry (a linked worktree is a top of its
// own). ok is false when there is none, or cwd is not an absolute, clean
// path.
func Root(cwd string) (root string, ok bool) {
	if !valid(cwd) {
		return "", false
	}
	top, _, ok := nearestGit(cwd)
	return top, ok
}

// nearestGit walks up from dir to the nearest directory with a .git entry
// and returns it and the entry's information.
func nearestGit(dir string) (string, os.FileInfo, bool) {
	for top := dir; ; {
		if fi, err := os.Stat(filepath.Join(top, ".git")); err == nil {
			return top, fi, true
		}
		parent := filepath.Dir(top)
		if parent == top {
			return "", nil, false
		}
		top = parent
	}
}

// find walks up from dir to the nearest .git and names the repository it
// belongs to.
func find(dir string) (repo, bool) {
	top, fi, ok := nearestGit(dir)
	if !ok {
		return repo{}, false
	}
	common, ok := commonDir(top, filepath.Join(top, ".git"), fi.IsDir())
	if !ok {
		return repo{}, false
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil {
		return repo{}, false
	}
	return repo{common: common, rel: rel}, true
}

// commonDir returns the shared repository directory of the worktree at top,
// whose .git entry is dotgit: the entry itself when it is a directory, else
// the gitdir its "gitdir: " line names, or that gitdir's commondir when it
// has one (a linked worktree; a submodule's gitdir has none).
func commonDir(top, dotgit string, isDir bool) (string, bool) {
	if isDir {
		return resolve(dotgit), true
	}
	line, ok := readLine(dotgit)
	if !ok {
		return "", false
	}
	gitdir, found := strings.CutPrefix(line, "gitdir:")
	gitdir = strings.TrimSpace(gitdir)
	if !found || gitdir == "" {
		return "", false
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(top, gitdir)
	}
	gitdir = filepath.Clean(gitdir)
	if fi, err := os.Stat(gitdir); err != nil || !fi.IsDir() {
		return "", false
	}
	common := gitdir
	if c, ok := readLine(filepath.Join(gitdir, "commondir")); ok && c != "" {
		if filepath.IsAbs(c) {
			common = filepath.Clean(c)
		} else {
			common = filepath.Join(gitdir, c)
		}
	}
	return resolve(common), true
}

// readLine returns the first line of a small file, without its line end.
// A FIFO, socket, device (or a symbolic link to one) is refused without
// being opened for a wait, and so is anything over maxGitFile: a hostile
// working directory cannot hang or bloat a filtered request.
func readLine(name string) (string, bool) {
	b, err := smallfile.Read(name, maxGitFile)
	if err != nil || len(b) == 0 {
		return "", false
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	b = bytes.TrimRight(b, "\r")
	if bytes.IndexByte(b, 0) >= 0 {
		return "", false
	}
	return string(b), true
}
