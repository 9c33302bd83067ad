package proc

// maxDepth bounds the walk up the process tree. Real trees are a few dozen
// levels deep; the bound keeps a corrupt or looping (fake) tree from
// spinning.
const maxDepth = 1024

// Descends reports whether pid is ancestor or descends from it, walking
// parents through /proc/<pid>/stat under root. A pid that does not exist (any
// more), a non-positive pid or ancestor, an unreadable or malformed stat and
// a parent chain that loops are all false, never an error.
func Descends(root string, pid, ancestor int) bool {
	if pid <= 0 || ancestor <= 0 {
		return false
	}
	cur := pid
	for range maxDepth {
		st, err := ReadStat(root, cur)
		if err != nil {
			return false // vanished (pid itself, or a parent mid-walk) or unreadable
		}
		if cur == ancestor {
			return true
		}
		if st.PPID <= 0 || st.PPID == cur {
			return false // reached the top (init's parent is 0) or a self loop
		}
		cur = st.PPID
	}
	return false
}
