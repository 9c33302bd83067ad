// Package binpath finds the stable path of the agentbridge program that
// other programs are told to run (the hook command an agent's settings
// hold): this binary or a path the user names, never one in a build
// directory that the next rebuild, `make clean` or a moved checkout takes
// away.
package binpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Self is this binary's path, absolute with symlinks resolved (what
// os.Executable says a running program is).
func Self() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this binary: %w", err)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Clean(p), nil
}

// Given is a path the user names (--bin): made absolute and clean, but
// not resolved, so that a package manager's stable link
// (/usr/local/bin/agentbridge → …/Cellar/agentbridge/0.3.1/bin/agentbridge)
// stays the path written.
func Given(p string) (string, error) {
	if p == "" {
		return "", errors.New("the program path is empty")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("make %s absolute: %w", p, err)
	}
	return abs, nil
}

// BuildDir says why p is inside a build directory ("" when it is not):
// a `go run` or `go test` binary in a go-build temporary directory, or a
// binary whose directory or that directory's parent is a Go source tree
// (it holds go.mod), like a checkout's bin/agentbridge or a `go build` in
// its root. A .git alone does not count: a home kept in git (dotfiles)
// has ~/bin beside ~/.git, and that is a stable place. The path's
// symlinks are followed: a link into a checkout is in the checkout.
func BuildDir(p string) string {
	paths := []string{p}
	if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
		paths = append(paths, r)
	}
	for _, p := range paths {
		for _, el := range strings.Split(filepath.ToSlash(p), "/") {
			if strings.HasPrefix(el, "go-build") {
				return "a temporary build of `go run` or `go test`"
			}
		}
		dir := filepath.Dir(p)
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if _, err := os.Lstat(filepath.Join(d, "go.mod")); err == nil {
				return "a source checkout (" + filepath.Join(d, "go.mod") + " is beside it)"
			}
		}
	}
	return ""
}

// Check says why p cannot be run (nil when it can): it is gone, not a
// regular file, or not executable.
func Check(p string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("it is gone")
	case err != nil:
		return fmt.Errorf("it cannot be read: %w", err)
	case !fi.Mode().IsRegular():
		return errors.New("it is not a regular file")
	case fi.Mode().Perm()&0o111 == 0:
		return errors.New("it is not executable")
	}
	return nil
}
