package live

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The live suite's Linux-only helpers (pidfd, inotify); exit_other_test.go
// keeps the package compiling elsewhere, so that go vet checks it there.

// awaitExit waits (at most timeout) until each of pids has exited, each
// watched by a pidfd, and returns those that have not.
func awaitExit(pids []int, timeout time.Duration) []int {
	var fds []unix.PollFd
	byFd := map[int32]int{}
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		byFd[int32(fd)] = pid
	}
	defer func() {
		for fd := range byFd {
			unix.Close(int(fd))
		}
	}()
	deadline := time.Now().Add(timeout)
	for len(fds) > 0 {
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms <= 0 {
			break
		}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		fds = slices.DeleteFunc(fds, func(p unix.PollFd) bool { return p.Revents != 0 })
	}
	var left []int
	for _, p := range fds {
		left = append(left, byFd[p.Fd])
	}
	return left
}

// lastClose watches path (inotify IN_CLOSE_WRITE, independently of the
// bridge) and returns a function that tells when a writer last closed it,
// waiting up to wait (stretched for load) for a first close: the watch's
// goroutine reads the close when it next runs, which on a loaded machine
// can be after the bridge reported what followed from the same close.
func lastClose(t *testing.T, path string) func(wait time.Duration) time.Time {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	var mu sync.Mutex
	var at time.Time
	first := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := unix.Read(fd, buf)
			if err != nil || n <= 0 {
				return
			}
			mu.Lock()
			if at.IsZero() {
				close(first)
			}
			at = time.Now()
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { unix.Close(fd) })
	return func(wait time.Duration) time.Time {
		select {
		case <-first:
		case <-time.After(slow(wait)):
		}
		mu.Lock()
		defer mu.Unlock()
		return at
	}
}
