package proc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// The pure logic of macOS's process table (system_darwin.go), here so that
// it is tested on every platform.

// kinfoStat is the Stat of a process from its kinfo_proc: StartTime is its
// start in microseconds since the Unix epoch (with PID it names one
// process, as the clock ticks of Linux do), Started the same as a time.
func kinfoStat(pid, ppid int, sec, usec int64) Stat {
	at := time.Unix(sec, usec*int64(time.Microsecond))
	return Stat{PID: pid, PPID: ppid, StartTime: uint64(at.UnixMicro()), Started: at}
}

// parseProcArgs parses what macOS's kern.procargs2 sysctl returns: argc (a
// 32-bit integer in host order, little-endian on every Mac), the path of
// the executable, NUL padding, then argc arguments each ended by a NUL,
// then the environment (never returned). The arguments come back ended by
// NULs as in Linux's /proc/<pid>/cmdline, cut to limit bytes (0: no
// limit).
func parseProcArgs(b []byte, limit int64) (exe string, args []byte, err error) {
	if len(b) < 4 {
		return "", nil, fmt.Errorf("proc: short procargs2 (%d bytes)", len(b))
	}
	argc := int(int32(binary.LittleEndian.Uint32(b)))
	if argc < 0 {
		return "", nil, fmt.Errorf("proc: procargs2: argc %d", argc)
	}
	rest := b[4:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return "", nil, fmt.Errorf("proc: procargs2: unterminated executable path")
	}
	exe, rest = string(rest[:i]), rest[i:]
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	end := 0
	for n := 0; n < argc && end < len(rest); n++ {
		j := bytes.IndexByte(rest[end:], 0)
		if j < 0 {
			end = len(rest) // the last argument, cut short
			break
		}
		end += j + 1
	}
	args = rest[:end]
	if limit > 0 && int64(len(args)) > limit {
		args = args[:limit]
	}
	return exe, args, nil
}
