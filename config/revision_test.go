package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRevisionFileNextToTheToken(t *testing.T) {
	t.Parallel()
	home, env := setup(t, "")
	c, err := Load(flags(t), append(env, "XDG_STATE_HOME="+filepath.Join(home, "st")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(c.RevisionFile()), filepath.Join(home, "st", "agentbridge", "revision"); got != want {
		t.Errorf("RevisionFile() = %q, want %q", got, want)
	}
	if got := (&Config{}).RevisionFile(); got != "" {
		t.Errorf("RevisionFile() without a state directory = %q, want empty", got)
	}
}

func TestRevisionFileSavesAndLoads(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state", "agentbridge")
	f := RevisionFile(filepath.Join(dir, "revision"))
	if n, err := f.Load(); n != 0 || err != nil {
		t.Fatalf("Load() of a missing file = %d, %v; want 0, nil", n, err)
	}
	for _, mark := range []uint64{1_796_000_000_000_000, 1_796_000_001_000_000} {
		if err := f.Save(mark); err != nil {
			t.Fatal(err)
		}
		if n, err := f.Load(); n != mark || err != nil {
			t.Errorf("Load() after Save(%d) = %d, %v", mark, n, err)
		}
	}
	fi, err := os.Stat(string(f))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("revision file mode %04o, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("state directory mode %04o, want 0700", di.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("state directory holds %d files after saving, want just the mark (no temporary files)", len(ents))
	}
	if err := os.WriteFile(string(f), []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Load(); err == nil {
		t.Errorf("Load() of a garbled file succeeded, want an error")
	}
}
