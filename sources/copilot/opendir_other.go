//go:build !unix

package copilot

// openDir are the flags a session directory is opened with besides
// O_RDONLY: none on this platform.
const openDir = 0
