//go:build !unix

package smallfile

// OpenFlags: none on this platform (see flags_unix.go).
const OpenFlags = 0
