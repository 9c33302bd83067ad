package proc

import "errors"

// Alive reports whether pid names a running process with the given start
// time (0: any).
func Alive(pid int, start uint64) bool {
	st, err := ReadStat(Root, pid)
	return err == nil && (start == 0 || st.StartTime == start)
}

// pinned checks that pid, which a pidfd or a kqueue registration now pins,
// names the process started at start (0: any): ErrNoProcess when it does
// not (pid reuse) or is gone.
func pinned(pid int, start uint64) error {
	st, err := ReadStat(Root, pid)
	if err != nil && !errors.Is(err, ErrNoProcess) {
		return err
	}
	if err != nil || (start != 0 && st.StartTime != start) {
		return ErrNoProcess
	}
	return nil
}
