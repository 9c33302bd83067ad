package bridgetest

import (
	"context"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Served is a bridge run in-process by Serve.
type Served struct {
	Dashboard
	Stderr *LogBuffer // what the bridge wrote to stderr

	cancel context.CancelFunc
	errc   chan error
	once   sync.Once
	err    error
}

// Serve runs run (the serve command: it prints its dashboard URL on
// stdout, then serves until ctx ends) in the background until the test
// ends, and returns once the URL is printed; a bridge that prints none
// within 15 s fails the test.
func Serve(t testing.TB, run func(ctx context.Context, stdout, stderr io.Writer) error) *Served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &Served{Stderr: &LogBuffer{}, cancel: cancel, errc: make(chan error, 1)}
	go func() {
		err := run(ctx, pw, s.Stderr)
		pw.CloseWithError(io.EOF)
		s.errc <- err
	}()
	t.Cleanup(func() { s.Stop(t) })
	d, err := waitDashboard(pr, 15*time.Second)
	if err != nil {
		cancel()
		t.Fatalf("serve: %v; stderr:\n%s", err, s.Stderr)
	}
	s.Dashboard = d
	return s
}

// Stop cancels the bridge and returns what run returned; a bridge that
// does not return within 20 s fails the test. Later calls return the same.
func (s *Served) Stop(t testing.TB) error {
	t.Helper()
	s.once.Do(func() {
		s.cancel()
		select {
		case s.err = <-s.errc:
		case <-time.After(20 * time.Second):
			t.Errorf("serve did not return within 20s of cancel; stderr:\n%s", s.Stderr)
		}
	})
	return s.err
}

// Process is a bridge running as a child process, started by Exec.
type Process struct {
	Dashboard
	Cmd    *exec.Cmd
	Stderr *LogBuffer
	// Exited delivers the result of Cmd.Wait once; read it at most once.
	Exited <-chan error
}

// Exec starts cmd (a bridge that prints its dashboard URL on stdout) and
// returns once the URL is printed; a bridge that prints none within 20 s
// fails the test. cmd.Stderr is set. The process is killed when the test
// ends.
func Exec(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, Stderr: &LogBuffer{}}
	cmd.Stderr = p.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, waited := make(chan error, 1), make(chan struct{})
	p.Exited = exited
	go func() { exited <- cmd.Wait(); close(waited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-waited })
	d, err := waitDashboard(out, 20*time.Second)
	if err != nil {
		t.Fatalf("bridge: %v; stderr:\n%s", err, p.Stderr)
	}
	p.Dashboard = d
	return p
}

// waitDashboard is WaitDashboard with a bound.
func waitDashboard(r io.Reader, within time.Duration) (Dashboard, error) {
	type result struct {
		d   Dashboard
		err error
	}
	c := make(chan result, 1)
	go func() {
		d, err := WaitDashboard(r)
		c <- result{d, err}
	}()
	select {
	case res := <-c:
		return res.d, res.err
	case <-time.After(within):
		return Dashboard{}, ErrNoDashboard
	}
}
