// Package smallfile reads small side files from places an attacker may
// have written (an agent's home, a session's working directory, the state
// directory) without ever blocking or reading without bound: a FIFO, a
// socket, a device, a symbolic link to one of them or a sparse 4 GiB file
// is refused with a typed error instead of hanging or exhausting memory.
//
// It sits below every other package of the module (project, config and
// sources use it) and imports nothing of it.
package smallfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Errors of Read, to be matched with errors.Is. Their text names no path.
var (
	// ErrNotRegular: the path (after following symbolic links) is a
	// directory, FIFO, socket or device, not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file holds more bytes than the limit.
	ErrTooLarge = errors.New("file larger than its limit")
)

// Read returns the contents of the regular file at path, at most limit
// bytes. Symbolic links are followed, at start and later alike, but never
// into anything that is not a regular file: the target is stat'ed before it
// is opened (so a device is never opened), opened with O_NONBLOCK (so a FIFO
// put in place meanwhile does not wait for a writer) and checked again with
// fstat on the open descriptor. A file over limit (by its size, or by what
// a read finds when it grows meanwhile) fails with ErrTooLarge and no data;
// what is read never exceeds limit+1 bytes whatever the file claims.
// Errors wrap fs errors (fs.ErrNotExist, fs.ErrPermission) or the two
// above; like every *fs.PathError they may carry the path, so keep them
// out of default-level logs and diagnostics.
func Read(path string, limit int64) ([]byte, error) {
	limit = max(limit, 0)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := fits(fi, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpen(f, limit)
}

// ReadOpen is Read for a file already opened (with O_NONBLOCK, if it may
// be a FIFO): fstat, regular files only, at most limit bytes.
func ReadOpen(f *os.File, limit int64) ([]byte, error) {
	limit = max(limit, 0)
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := fits(fi, limit); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, ErrTooLarge // grew since the fstat
	}
	return b, nil
}

// fits says whether fi is a regular file of at most limit bytes.
func fits(fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w", Type(fi.Mode()), ErrNotRegular)
	}
	if fi.Size() > limit {
		return ErrTooLarge
	}
	return nil
}

// Type names what kind of file mode m is, for messages: "regular file",
// "directory", "FIFO", "socket", "device", "symbolic link".
func Type(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	default:
		return "special file"
	}
}
