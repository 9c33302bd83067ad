package sources

import (
	"github.com/agentbridge/agentbridge/internal/smallfile"
)

// Errors of ReadSmall, for callers that report them as typed diagnostics.
var (
	// ErrNotRegular: the path is a FIFO, socket, device or directory.
	ErrNotRegular = smallfile.ErrNotRegular
	// ErrTooLarge: the file is larger than the limit given.
	ErrTooLarge = smallfile.ErrTooLarge
)

// Limits of the small files sources read whole.
const (
	// LimitSidecar bounds registry and sidecar files (a session's
	// metadata, an agent's process registry).
	LimitSidecar = 64 << 10
)

// OpenFlags are the flags, besides O_RDONLY, that a file in an agent's
// home is opened with where the platform has them: never wait for a
// FIFO's writer, never follow a symbolic link, never take a terminal.
const OpenFlags = smallfile.OpenFlags

// ReadSmall reads a small file that sits in an agent's home or a
// session's directory, where anything may be: a symbolic link is followed,
// but what it leads to is stat'ed before it is opened (a device is never
// opened), opened without blocking (O_NONBLOCK, so a FIFO that took its
// place meanwhile cannot wedge the caller) and checked again with fstat:
// anything but a regular file is refused with ErrNotRegular. At most limit
// bytes are read: a larger file (a sparse 4 GiB one included) is refused
// with ErrTooLarge without being read. Errors may carry the path: keep
// them at debug level, and report a typed diagnostic instead.
func ReadSmall(path string, limit int64) ([]byte, error) {
	return smallfile.Read(path, limit)
}
