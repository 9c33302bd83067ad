package config

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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

// TestRevisionFileHostile: a revision file that is a FIFO, a link to
// /dev/zero or a sparse 4 GiB file fails to load at once (the hub then
// starts from the ceiling, as for any mark it cannot believe) instead of hanging or reading gigabytes.
func TestRevisionFileHostile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	if f, err := os.Create(sparse); err != nil || f.Truncate(4<<30) != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	for _, p := range []string{fifo, zero, sparse} {
		done := make(chan error, 1)
		go func() { _, err := RevisionFile(p).Load(); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("Load(%s) succeeded", filepath.Base(p))
			}
		case <-time.After(time.Minute):
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("Load(%s) hangs", filepath.Base(p))
		}
	}
}

// TestRevisionFileNumbers: what Load makes of a mark's text: a decimal
// uint64 (up to 2^64−1) is returned, for the hub to judge (hub.MaxMark);
// anything else is an error, which the hub treats like a mark too large.
func TestRevisionFileNumbers(t *testing.T) {
	for _, tc := range []struct {
		text string
		want uint64
		ok   bool
	}{
		{"42\n", 42, true},
		{"9223372036854775807", 1<<63 - 1, true},
		{"18446744073709551615\n", ^uint64(0), true},
		{"18446744073709551616", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1e9", 0, false},
		{"0x10", 0, false},
		{"", 0, false},
	} {
		p := filepath.Join(t.TempDir(), "revision")
		if err := os.WriteFile(p, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := RevisionFile(p).Load()
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Load(%q) = %d, %v; want %d, ok %v", tc.text, got, err, tc.want, tc.ok)
		}
	}
}
