package proc

import (
	"bytes"
	"strconv"
	"testing"
)

// FuzzParseStat: any /proc/<pid>/stat content parses or is refused with an
// error, never a panic; what parses is what the line says: the pid given,
// field 4 as the parent, field 20 as the thread count and field 22 as the
// start time, counted from the
// last ')' whatever the command name holds.
func FuzzParseStat(f *testing.F) {
	f.Fuzz(func(t *testing.T, pid int, b []byte) {
		st, err := parseStat(pid, b)
		if err != nil {
			if st != (Stat{}) {
				t.Fatalf("parseStat(%q) failed with a non-zero Stat %+v", b, st)
			}
			return
		}
		if st.PID != pid {
			t.Fatalf("parseStat(%d, %q): pid %d", pid, b, st.PID)
		}
		i := bytes.LastIndexByte(b, ')')
		fields := bytes.Fields(b[i+1:])
		if !sameInt(fields[1], st.PPID) {
			t.Fatalf("parseStat(%q): ppid %d, field 4 is %q", b, st.PPID, fields[1])
		}
		if !sameInt(fields[17], st.Threads) {
			t.Fatalf("parseStat(%q): threads %d, field 20 is %q", b, st.Threads, fields[17])
		}
		if u, err := strconv.ParseUint(string(fields[19]), 10, 64); err != nil || u != st.StartTime {
			t.Fatalf("parseStat(%q): start time %d, field 22 is %q", b, st.StartTime, fields[19])
		}
	})
}

func sameInt(b []byte, v int) bool {
	n, err := strconv.Atoi(string(b))
	return err == nil && n == v
}
