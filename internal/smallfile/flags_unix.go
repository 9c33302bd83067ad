//go:build unix

package smallfile

import "syscall"

// OpenFlags are the flags, besides the access mode, that a file in a
// place anyone may have changed (a home directory) is opened with: never
// wait for a FIFO's writer, never follow a symbolic link, never take a
// terminal. Where a platform lacks them, none (flags_other.go).
const OpenFlags = syscall.O_NONBLOCK | syscall.O_NOFOLLOW | syscall.O_NOCTTY
