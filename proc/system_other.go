//go:build !linux && !darwin

package proc

// Root names the system's process table. This platform has none the
// package can read: Root is a path that does not exist, so every lookup
// finds no process. Another path names a proc-like tree (tests).
const Root = "/proc"

// HoldersKnown reports whether this platform tells which processes hold a
// file open: not here.
const HoldersKnown = false

func tableAt(root string) table { return procfs(root) }
