package binpath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func file(t *testing.T, p string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBuildDir(t *testing.T) {
	root := t.TempDir()
	checkout := filepath.Join(root, "src", "agentbridge")
	file(t, filepath.Join(checkout, "go.mod"), 0o644)
	dotfiles := filepath.Join(root, "dotfiles-home") // a home kept in git
	if err := os.MkdirAll(filepath.Join(dotfiles, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	installed := file(t, filepath.Join(root, "home", ".local", "bin", "agentbridge"), 0o755)
	inCheckout := file(t, filepath.Join(checkout, "bin", "agentbridge"), 0o755)
	link := filepath.Join(root, "home", ".local", "bin", "agentbridge-dev")
	if err := os.Symlink(inCheckout, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string // a word of the reason, "" for none
	}{
		{installed, ""},
		{"/usr/local/bin/agentbridge", ""},
		{inCheckout, "checkout"},
		{file(t, filepath.Join(checkout, "agentbridge"), 0o755), "checkout"},
		{file(t, filepath.Join(dotfiles, "bin", "agentbridge"), 0o755), ""},
		{link, "checkout"},
		{filepath.Join(os.TempDir(), "go-build1234", "b001", "exe", "agentbridge"), "go run"},
	}
	for _, tt := range tests {
		got := BuildDir(tt.path)
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("BuildDir(%s) = %q, want %q", tt.path, got, tt.want)
		}
	}
	// the test binary itself is a go test build
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if BuildDir(self) == "" {
		t.Errorf("the test binary %s is not seen as a build", self)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	ok := file(t, filepath.Join(dir, "ok"), 0o755)
	noexec := file(t, filepath.Join(dir, "noexec"), 0o644)
	tests := []struct {
		path string
		want string
	}{
		{ok, ""},
		{noexec, "not executable"},
		{filepath.Join(dir, "gone"), "gone"},
		{dir, "not a regular file"},
	}
	for _, tt := range tests {
		err := Check(tt.path)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Check(%s) = %v, want %q", tt.path, err, tt.want)
		}
	}
	if p, err := Given("rel/agentbridge"); err != nil || !filepath.IsAbs(p) {
		t.Errorf("Given: %q %v", p, err)
	}
}
