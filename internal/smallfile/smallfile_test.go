package smallfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostile makes, in dir, every kind of file an attacker can leave where a
// small file is expected, and returns their paths by name.
func hostile(t testing.TB, dir string) map[string]string {
	t.Helper()
	p := func(n string) string { return filepath.Join(dir, n) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(syscall.Mkfifo(p("fifo"), 0o600))
	must(os.Symlink("/dev/zero", p("zero")))
	must(os.Symlink("/dev/urandom", p("urandom")))
	must(os.Symlink(p("fifo"), p("fifo-link")))
	f, err := os.Create(p("sparse"))
	must(err)
	must(f.Truncate(4 << 30))
	f.Close()
	must(os.Mkdir(p("dir"), 0o700))
	must(os.WriteFile(p("big"), make([]byte, 70<<10), 0o600))
	return map[string]string{
		"FIFO": p("fifo"), "symlink to /dev/zero": p("zero"), "symlink to /dev/urandom": p("urandom"),
		"symlink to a FIFO": p("fifo-link"), "sparse 4 GiB": p("sparse"), "directory": p("dir"), "70 KiB": p("big"),
		"/dev/zero": "/dev/zero", "/dev/null": "/dev/null",
	}
}

func TestReadRefusesHostileFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := map[string]error{
		"FIFO": ErrNotRegular, "symlink to /dev/zero": ErrNotRegular, "symlink to /dev/urandom": ErrNotRegular,
		"symlink to a FIFO": ErrNotRegular, "sparse 4 GiB": ErrTooLarge, "directory": ErrNotRegular, "70 KiB": ErrTooLarge,
		"/dev/zero": ErrNotRegular, "/dev/null": ErrNotRegular,
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for name, path := range hostile(t, dir) {
		start := time.Now()
		b, err := Read(path, 64<<10)
		if took := time.Since(start); took > time.Minute { // a wait, not a speed
			t.Errorf("%s: Read took %v, want no wait", name, took)
		}
		if !errors.Is(err, want[name]) || b != nil {
			t.Errorf("%s: Read = %d bytes, %v; want %v", name, len(b), err, want[name])
		}
		if strings.Contains(err.Error(), dir) {
			t.Errorf("%s: error %q names the path", name, err)
		}
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("reading the hostile files allocated %d bytes, want well under 4 MiB", grew)
	}
}

func TestReadSmallFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		data  string
		limit int64
		err   error
	}{
		{"empty", "", 10, nil},
		{"at the limit", "0123456789", 10, nil},
		{"one over", "0123456789a", 10, ErrTooLarge},
		{"zero limit, empty", "", 0, nil},
		{"zero limit", "x", 0, ErrTooLarge},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.data), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := Read(p, tc.limit)
		if !errors.Is(err, tc.err) || (err == nil && string(b) != tc.data) {
			t.Errorf("%s: Read = %q, %v; want %q, %v", tc.name, b, err, tc.data, tc.err)
		}
		if os.Symlink(p, p+".link") == nil {
			if b2, err2 := Read(p+".link", tc.limit); string(b2) != string(b) || !errors.Is(err2, tc.err) {
				t.Errorf("%s via a symlink: Read = %q, %v", tc.name, b2, err2)
			}
		}
	}
	if _, err := Read(filepath.Join(dir, "missing"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestReadOpenFIFO: a FIFO opened without blocking is refused by fstat,
// never read (which would wait for a writer).
func TestReadOpenFIFO(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := ReadOpen(f, 10); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadOpen(FIFO) = %v, want ErrNotRegular", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("gitdir: /x/.git/worktrees/a\n"), int64(4096))
	f.Add([]byte{}, int64(0))
	f.Add([]byte("{\"pid\":1}"), int64(3))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := Read(p, limit)
		switch {
		case max(limit, 0) >= int64(len(data)):
			if err != nil || string(b) != string(data) {
				t.Fatalf("Read(%d bytes, limit %d) = %d bytes, %v", len(data), limit, len(b), err)
			}
		case !errors.Is(err, ErrTooLarge) || b != nil:
			t.Fatalf("Read(%d bytes, limit %d) = %d bytes, %v; want ErrTooLarge", len(data), limit, len(b), err)
		}
	})
}
