//go:build unix

package main

import "syscall"

// openSmall are the flags a small state file is opened with besides
// O_RDONLY: never wait for a FIFO's writer nor follow a link.
const openSmall = syscall.O_NONBLOCK | syscall.O_NOFOLLOW
