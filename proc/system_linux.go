package proc

// Root is where the proc file system is mounted: the system's process
// table.
const Root = "/proc"

// HoldersKnown reports whether this platform tells which processes hold a
// file open (OpenFiles, FindHolders, Writers): on Linux, /proc/<pid>/fd.
const HoldersKnown = true

func tableAt(root string) table { return procfs(root) }
