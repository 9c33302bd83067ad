package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFile: a new file gets the mode, an old one is replaced whole,
// and no temporary file is left beside it.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "export.csv")
	if err := WriteFile(path, []byte("first, longer content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("second\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "second\n" {
		t.Fatalf("content %q, %v; want the second write whole", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want only the written one", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir"), []byte("x"), 0o600); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}
