//go:build !unix

package main

// openSmall are the flags a small state file is opened with besides
// O_RDONLY: none on this platform.
const openSmall = 0
