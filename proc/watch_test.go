package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testenv"
)

const waitTimeout = 10 * time.Second

// startSleeper starts a child that lives until killed and is reaped at the
// end of the test.
func startSleeper(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	if len(args) == 0 {
		args = []string{"sleep", "600"}
	}
	cmd := exec.Command(args[0], args[1:]...)
	if err := cmd.Start(); err != nil {
		testenv.Missing(t, "cannot start a child process: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestWatchReportsExit(t *testing.T) {
	t.Parallel()
	cmd := startSleeper(t)
	st, err := ReadStat(Root, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	if err := Watch(context.Background(), cmd.Process.Pid, st.StartTime, func() { close(exited) }); err != nil {
		t.Fatalf("Watch = %v", err)
	}
	select {
	case <-exited:
		t.Fatal("onExit called while the process runs")
	case <-time.After(50 * time.Millisecond):
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(waitTimeout):
		t.Fatal("onExit not called after the process was killed")
	}
}

func TestWatchGuardsPidReuse(t *testing.T) {
	t.Parallel()
	cmd := startSleeper(t)
	st, err := ReadStat(Root, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	called := false
	err = Watch(context.Background(), cmd.Process.Pid, st.StartTime+1, func() { called = true })
	if !errors.Is(err, ErrNoProcess) {
		t.Errorf("Watch with another start time = %v, want ErrNoProcess", err)
	}
	if called {
		t.Error("onExit called")
	}
}

func TestWatchGoneProcess(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		testenv.Missing(t, "cannot run true: %v", err)
	}
	if err := Watch(context.Background(), cmd.Process.Pid, 0, func() {}); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Watch of a reaped process = %v, want ErrNoProcess", err)
	}
}

func TestWatchEndsWithContext(t *testing.T) {
	t.Parallel()
	cmd := startSleeper(t)
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan struct{}, 1)
	if err := Watch(ctx, cmd.Process.Pid, 0, func() { called <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	cancel() // from here on, onExit must not be called
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	select {
	case <-called:
		t.Error("onExit called after the context ended")
	case <-time.After(100 * time.Millisecond):
	}
}

func TestFindHolders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A child that holds the file open on stdin.
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "600")
	cmd.Stdin = f
	if err := cmd.Start(); err != nil {
		testenv.Missing(t, "cannot start a child process: %v", err)
	}
	f.Close() // only the child holds it now; our own process is skipped anyway
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	got, err := FindHolders(Root, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{cmd.Process.Pid}) {
		t.Errorf("FindHolders = %v, want [%d]", got, cmd.Process.Pid)
	}
	// Renamed since it was opened: still found (by inode).
	q := filepath.Join(dir, "t.jsonl")
	if err := os.Rename(p, q); err != nil {
		t.Fatal(err)
	}
	if got, _ := FindHolders(Root, q); !slices.Equal(got, []int{cmd.Process.Pid}) {
		t.Errorf("FindHolders after rename = %v, want [%d]", got, cmd.Process.Pid)
	}
	fi, err := os.Stat(q)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := KeyOf(fi)
	all, err := OpenFiles(Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(all[k], []int{cmd.Process.Pid}) {
		t.Errorf("OpenFiles[%v] = %v, want [%d]", k, all[k], cmd.Process.Pid)
	}
	// A file nobody holds.
	other := filepath.Join(dir, "free.jsonl")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := FindHolders(Root, other); len(got) != 0 {
		t.Errorf("FindHolders of a free file = %v, want none", got)
	}
}

func TestStartedAt(t *testing.T) {
	t.Parallel()
	st, err := ReadStat(Root, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	at, err := StartedAt(st)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(at); d < 0 || d > time.Hour {
		t.Errorf("this test process started %v ago, want a little", d)
	}
}
