package proc

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Watch calls onExit once, on a goroutine of its own, when the process pid
// ends. start is the process's start time (Stat.StartTime) as the caller
// knew it; when the pid now names another process (pid reuse) or no
// process, Watch returns ErrNoProcess and the caller should treat the
// process as exited. start 0 skips the check.
//
// The exit is observed through a pidfd (pidfd_open(2)) registered with the
// Go runtime's poller: no timer, no thread blocked per process. When ctx
// ends first, the pidfd is closed, onExit is not called, and the goroutine
// ends. The exit code of a process that is not the bridge's child cannot be
// known.
func Watch(ctx context.Context, pid int, start uint64, onExit func()) error {
	pfd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return ErrNoProcess
		}
		return fmt.Errorf("proc: pidfd_open %d: %w", pid, err)
	}
	// The pidfd now pins one process; check it is the one the caller means.
	if err := pinned(pid, start); err != nil {
		unix.Close(pfd)
		return err
	}
	f := os.NewFile(uintptr(pfd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return fmt.Errorf("proc: pidfd of %d: %w", pid, err)
	}
	stop := context.AfterFunc(ctx, func() { f.Close() })
	go func() {
		exited := false
		_ = rc.Read(func(fd uintptr) bool {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(p, 0)
			if err == nil && n > 0 {
				exited = true
				return true
			}
			return false // not yet: wait in the runtime poller
		})
		if stop() { // the AfterFunc did not run: we own f
			f.Close()
			if exited && ctx.Err() == nil {
				onExit()
			}
		}
	}()
	return nil
}
