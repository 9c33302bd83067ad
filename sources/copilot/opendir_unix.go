//go:build unix

package copilot

import "syscall"

// openDir are the flags a session directory is opened with besides
// O_RDONLY: O_DIRECTORY|O_NONBLOCK, so that a FIFO or device in its place
// is refused instead of blocking the source.
const openDir = syscall.O_DIRECTORY | syscall.O_NONBLOCK
