package sourcestest

import (
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readWatch sees, with inotify, when a file in a watched directory has been
// read by anyone (IN_CLOSE_NOWRITE: a read-only descriptor closed): the witness that the source
// under test has read what was just written, without reaching into it.
// Linux only (access_other.go).
type readWatch struct {
	fd  int
	wds map[int32]string // watch descriptor → directory
	buf [64 << 10]byte
}

func newReadWatch() (*readWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &readWatch{fd: fd, wds: map[int32]string{}}, nil
}

// add watches dir (idempotent).
func (w *readWatch) add(dir string) error {
	wd, err := unix.InotifyAddWatch(w.fd, dir, unix.IN_CLOSE_NOWRITE)
	if err != nil {
		return err
	}
	w.wds[int32(wd)] = dir
	return nil
}

// reads returns the paths read since the last call, waiting up to d for
// the first one (0: not at all).
func (w *readWatch) reads(d time.Duration) map[string]bool {
	got := map[string]bool{}
	if d > 0 {
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, int(d/time.Millisecond)+1); err != nil || n == 0 {
			return got
		}
	}
	for {
		n, err := unix.Read(w.fd, w.buf[:])
		if err != nil || n <= 0 {
			return got
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			name := w.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			if dir, ok := w.wds[ev.Wd]; ok && len(name) > 0 {
				got[filepath.Join(dir, string(name))] = true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// waitRead waits up to d for path to be read.
func (w *readWatch) waitRead(path string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		if w.reads(time.Until(deadline))[path] {
			return true
		}
	}
	return false
}

func (w *readWatch) close() { unix.Close(w.fd) }
