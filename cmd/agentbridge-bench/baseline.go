package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The baseline revision (-baseline): the bench program of this checkout
// (its phases, corpora and workloads) compiled against the packages of
// another revision (its hub, sse and sources), so that a phase run by both
// binaries over the same corpus in the same run compares the bridge of
// today with the bridge of that revision and nothing else. The revision's
// tree is exported with git archive into the bench's temporary directory,
// this checkout's cmd/agentbridge-bench replaces the revision's, and the
// result is built there; the tree is removed once the binary is built.
//
// -baseline auto is the merge-base of HEAD with main (on a branch: main as
// the branch started from it), or HEAD~ when that is HEAD itself (on main:
// the commit before the last one).

// baseline is a built bench binary of a baseline revision.
type baseline struct {
	rev string // how the report names the revision
	exe string
}

// git runs git in dir and returns its trimmed standard output.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// resolveBaseline returns the commit rev names (auto: see above) and how
// the report names it.
func resolveBaseline(top, rev string) (commit, name string, err error) {
	how := ""
	if rev == "auto" {
		head, err := git(top, "rev-parse", "HEAD")
		if err != nil {
			return "", "", err
		}
		if rev, err = git(top, "merge-base", "HEAD", "main"); err != nil {
			return "", "", err
		}
		how = " (merge-base with main)"
		if rev == head {
			rev, how = "HEAD~", " (HEAD~)"
		}
	}
	if commit, err = git(top, "rev-parse", "--verify", rev+"^{commit}"); err != nil {
		return "", "", err
	}
	return commit, commit[:10] + how, nil
}

// errNoCheckout is buildBaseline's error when the bench does not run in
// a git checkout.
var errNoCheckout = errors.New("-baseline needs the bench run from its git checkout (or -baseline none)")

// buildBaseline builds the bench program of this checkout against the
// packages of rev, under root.
func buildBaseline(rev, root string) (*baseline, error) {
	top, err := git(".", "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoCheckout, err)
	}
	commit, name, err := resolveBaseline(top, rev)
	if err != nil {
		return nil, fmt.Errorf("-baseline %s: %w", rev, err)
	}
	src := filepath.Join(root, "baseline-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, fmt.Errorf("baseline tree: %w", err)
	}
	defer os.RemoveAll(src)
	archive := exec.Command("git", "archive", "--format=tar", commit)
	archive.Dir = top
	tarball, err := archive.Output()
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", name, err)
	}
	untar := exec.Command("tar", "-x", "-C", src)
	untar.Stdin = bytes.NewReader(tarball)
	if out, err := untar.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("export %s: %w: %s", name, err, out)
	}
	bench := filepath.Join("cmd", "agentbridge-bench")
	if err := os.RemoveAll(filepath.Join(src, bench)); err != nil {
		return nil, fmt.Errorf("baseline tree: %w", err)
	}
	if err := copyTree(filepath.Join(top, bench), filepath.Join(src, bench)); err != nil {
		return nil, fmt.Errorf("baseline tree: %w", err)
	}
	exe := filepath.Join(root, "agentbridge-bench-"+commit[:10])
	build := exec.Command("go", "build", "-o", exe, "./"+filepath.ToSlash(bench))
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build this bench against the packages of %s: %w\n%s", name, err, out)
	}
	return &baseline{rev: name, exe: exe}, nil
}

// copyTree copies the regular files and directories under from to to.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}

// comparison names the other side of a compared phase in the table.
type comparison struct {
	against string // appended to the measure
	other   string // follows the other side's figure
	miss    string // follows the ratio in a missed verdict
}

// revisionComparison compares with the bridge of the baseline revision.
func revisionComparison(rev string) comparison {
	return comparison{against: ", against the bridge of " + rev, other: "(same phase, corpus and bench program)", miss: "the baseline revision"}
}

// historyComparison compares the bridge keeping its history with the same
// bridge with the history off (history.enabled: false).
var historyComparison = comparison{against: ", history on vs off (same run)",
	other: "with history.enabled: false (same phase and corpus, right after)", miss: "history off"}

// compareRows turns the rows of a phase run on this tree's bridge (got)
// and on the other side of cmp (was) into one row per compared figure.
func compareRows(got, was []row, cmp comparison) []row {
	var out []row
	for i, g := range got {
		if g.Figure == 0 || i >= len(was) || was[i].Figure == 0 {
			continue
		}
		w := was[i]
		r := g.Figure / w.Figure
		ok := r <= g.Slack || g.Figure-w.Figure <= g.Floor
		tol := fmt.Sprintf("≤ %.2f×", g.Slack)
		if g.Floor > 0 {
			tol += fmt.Sprintf(" or ≤ %+.1f %s", g.Floor, g.Unit)
		}
		out = append(out, row{
			Measure:  g.Measure + cmp.against,
			Bridge:   fmt.Sprintf("%.1f %s", g.Figure, g.Unit),
			Baseline: fmt.Sprintf("%.1f %s %s", w.Figure, w.Unit, cmp.other),
			Ratio:    fmt.Sprintf("%.2f×", r),
			Target:   "no regression (" + tol + ")",
			Verdict:  verdict(ok, fmt.Sprintf("%.2f× %s", r, cmp.miss)),
		})
	}
	return out
}
