package proc

// Alive reports whether pid names a running process with the given start
// time (0: any).
func Alive(pid int, start uint64) bool {
	st, err := ReadStat(Root, pid)
	return err == nil && (start == 0 || st.StartTime == start)
}
