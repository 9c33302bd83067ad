package cursor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeSlug(t *testing.T) {
	dirs := map[string]bool{
		"/home": true, "/home/ana": true, "/home/ana/my-app": true, "/home/ana/shop": true,
		"/home/ana/my": true, "/home/ana/my/app": true, // both readings of home-ana-my-app exist
		"/srv": true, "/srv/a-b": true, "/srv/a-b/c": true,
	}
	isDir := func(p string) bool { return dirs[p] }
	for slug, want := range map[string]string{
		"home-ana-shop":   "/home/ana/shop",
		"srv-a-b-c":       "/srv/a-b/c", // /srv/a/b/c and /srv/a-b-c do not exist
		"home-ana-my-app": "",           // ambiguous: left out
		"home-ana-gone":   "",           // no such directory
		"empty-window":    "",
		"":                "",
		"-home-ana":       "",
		"home--ana":       "",
		"home-ana-":       "",
		"home":            "/home",
	} {
		if got := DecodeSlug(slug, isDir); got != want {
			t.Errorf("DecodeSlug(%q) = %q, want %q", slug, got, want)
		}
	}
}

// TestDecodeSlugBounded: a name with many parts, all of whose prefixes
// exist, stops after maxSlugProbes probes and gives nothing.
func TestDecodeSlugBounded(t *testing.T) {
	probes := 0
	got := DecodeSlug(strings.Repeat("a-", 40)+"a", func(string) bool { probes++; return true })
	if got != "" || probes > maxSlugProbes {
		t.Errorf("got %q after %d probes", got, probes)
	}
	if got := DecodeSlug(strings.Repeat("a-", maxSlugSegments)+"a", func(string) bool { t.Fatal("probed"); return true }); got != "" {
		t.Errorf("got %q", got)
	}
}

// TestDecodeSlugOnDisk decodes against a real directory tree.
func TestDecodeSlugOnDisk(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "work", "my-app"), 0o755); err != nil {
		t.Fatal(err)
	}
	slug := strings.ReplaceAll(strings.TrimPrefix(filepath.Join(root, "work", "my-app"), "/"), "/", "-")
	if strings.Contains(strings.TrimPrefix(root, "/"), "-") {
		t.Skip("the temporary directory's own name has a dash")
	}
	if got, want := DecodeSlug(slug, dirExists), filepath.Join(root, "work", "my-app"); got != want {
		t.Errorf("DecodeSlug(%q) = %q, want %q", slug, got, want)
	}
}
