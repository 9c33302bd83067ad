package sources

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/proc"
)

// closedPaths collects what a CloseWatch reports.
func closeWatch(t *testing.T) (*CloseWatch, chan string) {
	t.Helper()
	got := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewCloseWatch(ctx, proc.Agent{}, func(p string) { got <- p })
	if err != nil {
		testenv.Missing(t, "no inotify: %v", err)
	}
	t.Cleanup(func() { cancel(); w.Close() })
	return w, got
}

func expectClosed(t *testing.T, got chan string, want string) {
	t.Helper()
	select {
	case p := <-got:
		if p != want {
			t.Fatalf("closed %q, want %q", p, want)
		}
	case <-time.After(time.Minute):
		t.Fatalf("no close reported for %s", filepath.Base(want))
	}
}

func expectNothing(t *testing.T, got chan string, why string) {
	t.Helper()
	select {
	case p := <-got:
		t.Fatalf("%s: closed %q reported", why, filepath.Base(p))
	case <-time.After(300 * time.Millisecond):
	}
}

// holder runs a process that keeps path open (redir: ">>" to write, "<"
// to read) until the test ends or it is killed.
func holder(t *testing.T, redir, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec 3"+redir+"\"$0\"; echo ok; exec sleep 60", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 3)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestCloseWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rollout.jsonl")
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, got := closeWatch(t)
	if err := w.Add(path); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(path); err != nil {
		t.Fatalf("adding twice: %v", err)
	}

	t.Run("the only writer closes", func(t *testing.T) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("{}\n")
		f.Close()
		expectClosed(t, got, path)
	})

	t.Run("a reader closing is not a writer closing", func(t *testing.T) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		expectNothing(t, got, "a read-only close")
	})

	t.Run("another process still writes", func(t *testing.T) {
		h := holder(t, ">>", path)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		expectNothing(t, got, "a writer still holds it")
		h.Process.Kill()
		h.Wait()
		expectClosed(t, got, path) // the last writer let go
	})

	t.Run("a process that only reads does not hold it back", func(t *testing.T) {
		holder(t, "<", path)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		expectClosed(t, got, path)
	})

	t.Run("removed from the watch", func(t *testing.T) {
		w.Remove(path)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		expectNothing(t, got, "after Remove")
	})
}

func TestCloseWatchDeletedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gone.jsonl")
	os.WriteFile(path, nil, 0o600)
	w, got := closeWatch(t)
	if err := w.Add(path); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	expectNothing(t, got, "a deleted file")
	// A new file under the same name is not watched until added again.
	os.WriteFile(path, []byte("x"), 0o600)
	expectNothing(t, got, "a new file of the same name")
	if err := w.Add(path); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte("y"), 0o600)
	expectClosed(t, got, path)
}

func TestCloseWatchEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewCloseWatch(ctx, proc.Agent{}, func(string) {})
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	cancel()
	select {
	case <-w.done:
	case <-time.After(time.Minute):
		t.Fatal("the watch goroutine did not end with its context")
	}
}

// TestCloseAfterEndWritesNowhere: a watch whose context ended has closed
// its descriptors; Close (the source's deferred call) and a late Add must
// not write to, or watch through, the numbers the process gave out again
// since (an accepted client socket got the wake-up's 8 bytes in front of
// its HTTP response).
func TestCloseAfterEndWritesNowhere(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewCloseWatch(ctx, proc.Agent{}, func(string) {})
	if err != nil {
		testenv.Missing(t, "no inotify: %v", err)
	}
	w.mu.Lock()
	wake := w.wake
	w.mu.Unlock()
	cancel()
	<-w.done
	// Take the freed number: descriptors are handed out lowest first.
	reused := -1
	var extra []int
	for range 64 {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			t.Fatal(err)
		}
		if fd == wake {
			reused = fd
			break
		}
		extra = append(extra, fd)
	}
	for _, fd := range extra {
		unix.Close(fd)
	}
	if reused < 0 {
		t.Fatalf("descriptor %d was not handed out again", wake)
	}
	defer unix.Close(reused)
	w.Close()
	if err := w.Add(filepath.Join(t.TempDir(), "x")); err == nil {
		t.Error("Add on an ended watch succeeded")
	}
	var b [8]byte
	if n, err := unix.Read(reused, b[:]); err == nil {
		t.Fatalf("Close wrote %d bytes into a descriptor it no longer owns", n)
	}
}
