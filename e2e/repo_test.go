package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// trackedFiles lists the files git tracks in the repository (skipping the
// test when this is not a git checkout).
func trackedFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			if _, err := os.Stat(filepath.Join(repoRoot, f)); err == nil {
				files = append(files, f)
			}
		}
	}
	return files
}

// productFile reports whether f is the project's own text (not a fixture
// copied from elsewhere, not the licence).
func productFile(f string) bool {
	return !strings.Contains("/"+f, "/testdata/") && f != "LICENSE" && f != "go.sum" &&
		!strings.HasSuffix(f, ".png") && !strings.HasSuffix(f, ".svg")
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// githubSlug is the anchor GitHub gives a heading.
func githubSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the heading anchors of a Markdown file.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	inCode := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " "); ok && !inCode && strings.HasPrefix(l, "#") {
			out[githubSlug(strings.ReplaceAll(h, "`", ""))] = true
		}
	}
	return out
}

// TestLinksResolve: every relative link of every Markdown file points at a
// file of the repository (and, with #anchor, at one of its headings).
func TestLinksResolve(t *testing.T) {
	files := trackedFiles(t)
	checked := 0
	for _, f := range files {
		if !strings.HasSuffix(f, ".md") || !productFile(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(link, "#")
			target := filepath.Join(filepath.Dir(filepath.Join(repoRoot, f)), path)
			if path == "" {
				target = filepath.Join(repoRoot, f)
			}
			rel, err := filepath.Rel(repoRoot, target)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: link %q leaves the repository", f, link)
				continue
			}
			tb, err := os.ReadFile(target)
			if fi, serr := os.Stat(target); serr == nil && fi.IsDir() {
				err = nil
			}
			if err != nil {
				t.Errorf("%s: link %q: no such file in the repository", f, link)
				continue
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !anchors(string(tb))[anchor] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", f, link, rel, anchor)
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked only %d links; the pattern is broken", checked)
	}
}

// repoPath is a path written in running text or a comment, e.g.
// docs/contract.md or sources/claudecode/README.md.
var repoPath = regexp.MustCompile(`(?:^|[\s(\x60"'])((?:\.ci|api|cmd|config|dist|docs|e2e|extensions|hub|proc|project|sources|sse|validate|web)/[A-Za-z0-9_./-]*[A-Za-z0-9_])`)

// TestReferencesResolve: the files the repository's text names (a
// docs/… page in a comment, a source file in the README) exist, and
// nothing refers to documents outside the repository.
func TestReferencesResolve(t *testing.T) {
	outside := []*regexp.Regexp{
		regexp.MustCompile(`CONTRACT\.md`),
		regexp.MustCompile(`\bCONTRACT section`),
		regexp.MustCompile(`\.\./shared\b`),
		regexp.MustCompile(`(?i)\bissue \d+\b`),
		regexp.MustCompile(`(?i)owners' tests`),
	}
	self := filepath.Join("e2e", "repo_test.go")
	named := 0
	for _, f := range trackedFiles(t) {
		if !productFile(f) || f == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, re := range outside {
			if loc := re.FindStringIndex(text); loc != nil {
				line := strings.Count(text[:loc[0]], "\n") + 1
				t.Errorf("%s:%d refers outside the repository: %q", f, line, text[loc[0]:loc[1]])
			}
		}
		for _, m := range repoPath.FindAllStringSubmatch(text, -1) {
			p := strings.TrimSuffix(m[1], ".")
			if strings.ContainsAny(p, "*<>") {
				continue
			}
			named++
			if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
				t.Errorf("%s names %s, which is not in the repository", f, p)
			}
		}
	}
	if named < 20 {
		t.Errorf("found only %d named paths; the pattern is broken", named)
	}
}

// TestLicense: the licence the package manifests name is there.
func TestLicense(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "MIT License") || !strings.Contains(string(b), "Permission is hereby granted, free of charge") {
		t.Errorf("LICENSE is not the MIT licence:\n%.200s", b)
	}
	pkg, err := os.ReadFile(filepath.Join(repoRoot, "extensions", "terminay", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(pkg), `"license": "MIT"`) {
		t.Error(`extensions/terminay/package.json does not say "license": "MIT"`)
	}
}

// TestNoLargeTrackedFiles runs the CI check on this checkout, and on a
// scratch repository with a large file, which it must refuse.
func TestNoLargeTrackedFiles(t *testing.T) {
	trackedFiles(t) // skips outside a git checkout
	script := filepath.Join(repoRoot, ".ci", "large-files")
	cmd := exec.Command(script)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf(".ci/large-files fails on this checkout: %v\n%s", err, out)
	}

	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "small"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agentbridge"), make([]byte, 2<<20), 0o755); err != nil {
		t.Fatal(err)
	}
	git("add", "small", "agentbridge")
	cmd = exec.Command(script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "agentbridge") || strings.Contains(string(out), "small") {
		t.Errorf(".ci/large-files on a 2 MiB tracked file: err %v, output %q; want a failure naming only it", err, out)
	}
}

// maxGoLines is the most lines a non-test, non-generated Go file may have:
// past it a file holds more than one concern and is split by what each
// part provides (issue 30).
const maxGoLines = 800

// overLong lists the Go files still over maxGoLines. The list only shrinks:
// a file is never added, and an entry whose file has come under the limit
// (or is gone) fails TestRepoGoFileLength until it is removed.
var overLong = map[string]string{}

// generatedGo matches the line Go's convention puts in a generated file.
var generatedGo = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestRepoGoFileLength: no non-test, non-generated Go file tracked by git
// is over maxGoLines, except the allow-listed ones, each of which still is.
func TestRepoGoFileLength(t *testing.T) {
	lines := map[string]int{}
	for _, f := range trackedFiles(t) {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		if generatedGo.Match(b) {
			continue
		}
		lines[f] = strings.Count(string(b), "\n")
	}
	if len(lines) < 100 {
		t.Fatalf("found only %d Go files; the listing is broken", len(lines))
	}
	for f, n := range lines {
		if n > maxGoLines {
			if _, ok := overLong[f]; !ok {
				t.Errorf("%s has %d lines (at most %d): split it by concern, into files in the same package", f, n, maxGoLines)
			}
		}
	}
	for f := range overLong {
		if n := lines[f]; n <= maxGoLines {
			t.Errorf("%s has %d lines, within %d: remove it from overLong", f, n, maxGoLines)
		}
	}
}
