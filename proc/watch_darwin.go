package proc

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Watch calls onExit once, on a goroutine of its own, when the process pid
// ends. start is the process's start time (Stat.StartTime) as the caller
// knew it; when the pid now names another process (pid reuse) or no
// process, Watch returns ErrNoProcess and the caller should treat the
// process as exited. start 0 skips the check.
//
// The exit is observed with kqueue (EVFILT_PROC, NOTE_EXIT) on a kqueue of
// the watch's own, which the goroutine waits on without a timeout; when
// ctx ends first, an EVFILT_USER event wakes it, onExit is not called and
// the goroutine ends. The exit code of a process that is not the bridge's
// child cannot be known.
func Watch(ctx context.Context, pid int, start uint64, onExit func()) error {
	kq, err := unix.Kqueue()
	if err != nil {
		return fmt.Errorf("proc: kqueue: %w", err)
	}
	unix.CloseOnExec(kq)
	var ev [2]unix.Kevent_t
	unix.SetKevent(&ev[0], pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev[0].Fflags = unix.NOTE_EXIT
	unix.SetKevent(&ev[1], 0, unix.EVFILT_USER, unix.EV_ADD|unix.EV_CLEAR)
	if _, err := unix.Kevent(kq, ev[:], nil, nil); err != nil {
		unix.Close(kq)
		if errors.Is(err, unix.ESRCH) {
			return ErrNoProcess
		}
		return fmt.Errorf("proc: watch %d: %w", pid, err)
	}
	// The registration now follows one process; check it is the one the
	// caller means.
	if err := pinned(pid, start); err != nil {
		unix.Close(kq)
		return err
	}
	woke := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(woke)
		var wake [1]unix.Kevent_t
		unix.SetKevent(&wake[0], 0, unix.EVFILT_USER, 0)
		wake[0].Fflags = unix.NOTE_TRIGGER
		unix.Kevent(kq, wake[:], nil, nil)
	})
	go func() {
		exited := waitExit(kq)
		if !stop() {
			<-woke // ctx ended: the wake-up has been sent; kq is ours again
			unix.Close(kq)
			return
		}
		unix.Close(kq)
		if exited && ctx.Err() == nil {
			onExit()
		}
	}()
	return nil
}

// waitExit waits on kq until the process exits (true) or the watch is
// woken (false).
func waitExit(kq int) bool {
	var got [2]unix.Kevent_t
	for {
		n, err := unix.Kevent(kq, nil, got[:], nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false
		}
		for _, e := range got[:n] {
			if e.Filter == unix.EVFILT_PROC {
				return true
			}
		}
		if n > 0 {
			return false // woken: ctx ended
		}
	}
}
