package sources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/agentbridge/agentbridge/proc"
	"golang.org/x/sys/unix"
)

// CloseWatch tells when the last writer of a journal lets go of it: the
// kernel reports every close of a descriptor that was open for writing
// (inotify IN_CLOSE_WRITE, which fsnotify does not expose), and the watch
// then checks that no other process still holds the file open for
// writing (proc.FindWriters: only the agent's writers count; readers
// never do). A journal whose agent is hosted by a long-lived daemon (Codex's
// app-server) ends that way: the daemon closes the rollout and lives on,
// so neither the process's exit nor any timer tells.
//
// One goroutine reads the inotify descriptor; it ends with the context
// given to NewCloseWatch (Close waits for it). onClosed runs on that
// goroutine: hand the work to the source's own goroutine (Sessions.Post).
type CloseWatch struct {
	onClosed func(path string)
	agent    proc.Agent

	// mu guards the descriptors too: run closes them (and sets them to -1)
	// under it, so that a late Add, Remove or signal never reaches a
	// descriptor number the process has since given to something else
	// (a client's socket, say).
	mu       sync.Mutex
	fd, wake int
	byWD     map[int32]string
	byPath   map[string]int32
	done     chan struct{}
}

// NewCloseWatch starts a watch; agent says which processes count as
// writers (proc.Agent{} counts every process). It fails when inotify is
// unavailable (the caller goes on without it).
func NewCloseWatch(ctx context.Context, agent proc.Agent, onClosed func(path string)) (*CloseWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("close watch: inotify: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("close watch: eventfd: %w", err)
	}
	w := &CloseWatch{fd: fd, wake: wake, onClosed: onClosed, agent: agent,
		byWD: map[int32]string{}, byPath: map[string]int32{}, done: make(chan struct{})}
	go w.run()
	go func() {
		select {
		case <-ctx.Done():
			w.signal()
		case <-w.done:
		}
	}()
	return w, nil
}

// Add watches path (a regular file) until Remove or until it is deleted.
// Adding a path twice is a no-op.
func (w *CloseWatch) Add(path string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.byPath[path]; ok {
		return nil
	}
	if w.fd < 0 {
		return errors.New("close watch: closed")
	}
	wd, err := unix.InotifyAddWatch(w.fd, path, unix.IN_CLOSE_WRITE|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF)
	if err != nil {
		return fmt.Errorf("close watch: add: %w", err)
	}
	w.byWD[int32(wd)] = path
	w.byPath[path] = int32(wd)
	return nil
}

// Remove stops watching path.
func (w *CloseWatch) Remove(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wd, ok := w.byPath[path]; ok && w.fd >= 0 {
		unix.InotifyRmWatch(w.fd, uint32(wd))
		delete(w.byPath, path)
		delete(w.byWD, wd)
	}
}

// Close ends the watch and waits for its goroutine.
func (w *CloseWatch) Close() {
	w.signal()
	<-w.done
}

// signal wakes run to end; once run has ended it does nothing.
func (w *CloseWatch) signal() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wake >= 0 {
		one := [8]byte{1}
		unix.Write(w.wake, one[:])
	}
}

func (w *CloseWatch) run() {
	defer close(w.done)
	defer func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		unix.Close(w.wake)
		unix.Close(w.fd)
		w.fd, w.wake = -1, -1
	}()
	// Only run closes the descriptors: it reads them without the lock.
	fd := w.fd
	buf := make([]byte, 16*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(w.wake), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents == 0 {
			continue
		}
		n, err := unix.Read(fd, buf)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		for _, path := range w.closed(buf[:n]) {
			// A failed lookup (the file is gone) reports no writer: the
			// journal's writers let go of it either way.
			if pids, _ := proc.FindWriters(proc.Root, path, w.agent); len(pids) == 0 {
				w.onClosed(path)
			}
		}
	}
}

// closed parses inotify events and returns the watched paths a writer
// closed; deleted or moved files are forgotten.
func (w *CloseWatch) closed(b []byte) []string {
	var out []string
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		size := unix.SizeofInotifyEvent + int(ev.Len)
		if size > len(b) {
			break
		}
		b = b[size:]
		path, ok := w.byWD[ev.Wd]
		if !ok {
			continue
		}
		switch {
		case ev.Mask&unix.IN_CLOSE_WRITE != 0:
			if !slices.Contains(out, path) {
				out = append(out, path)
			}
		case ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
			if ev.Mask&unix.IN_IGNORED == 0 {
				unix.InotifyRmWatch(w.fd, uint32(ev.Wd))
			}
			delete(w.byWD, ev.Wd)
			delete(w.byPath, path)
		}
	}
	return out
}
