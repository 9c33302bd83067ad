package sources

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Errors of ReadSmall, for callers that report them as typed diagnostics.
var (
	// ErrNotRegular: the path is a FIFO, socket, device or directory.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than the limit given.
	ErrTooLarge = errors.New("file larger than its limit")
)

// Limits of the small files sources read whole.
const (
	// LimitSidecar bounds registry and sidecar files (a session's
	// metadata, an agent's process registry).
	LimitSidecar = 64 << 10
)

// ReadSmall reads a small file that sits in an agent's home or a
// session's directory, where anything may be: it opens without blocking
// (O_NONBLOCK, so a FIFO cannot wedge the caller), checks with fstat that
// what it opened is a regular file (a symbolic link is followed, but a
// link to /dev/zero or a FIFO is refused like the thing itself), and
// reads at most limit bytes: a larger file (a sparse 4 GiB one included)
// is refused with ErrTooLarge without being read.
func ReadSmall(path string, limit int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("read %s: %w", path, ErrNotRegular)
	}
	if st.Size > limit {
		return nil, fmt.Errorf("read %s: %w (%d bytes, limit %d)", path, ErrTooLarge, st.Size, limit)
	}
	// The file may grow between fstat and read: read one byte past the
	// limit to notice.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %s: %w", path, ErrTooLarge)
	}
	return data, nil
}
