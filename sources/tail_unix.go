//go:build unix

package sources

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openJournal are the flags a journal is opened with besides O_RDONLY.
// O_NONBLOCK: should a FIFO have taken the journal's place since the
// lstat, opening it must not wait for a writer; O_NOFOLLOW: nor may a
// symbolic link to a device.
const openJournal = syscall.O_NONBLOCK | syscall.O_NOFOLLOW | syscall.O_NOCTTY

// errHoleToEnd is what seekData returns when a hole runs to the end of
// the file.
var errHoleToEnd error = unix.ENXIO

// seekData moves to the first data at or after off (SEEK_DATA).
func seekData(f *os.File, off int64) (int64, error) { return f.Seek(off, unix.SEEK_DATA) }
