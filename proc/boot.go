package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// userHZ is the unit of Stat.StartTime: USER_HZ, 100 on every Linux
// architecture the bridge runs on (sysconf(_SC_CLK_TCK)).
const userHZ = 100

var bootOnce = sync.OnceValues(func() (time.Time, error) { return readBoot(Root) })

// StartedAt returns the wall-clock time at which the process of st started:
// st.Started where the table gave it, else from the boot time in
// /proc/stat.
func StartedAt(st Stat) (time.Time, error) {
	if !st.Started.IsZero() {
		return st.Started, nil
	}
	boot, err := bootOnce()
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(st.StartTime) * (time.Second / userHZ)), nil
}

// StartedAtIn is StartedAt for a process of the proc file system at root:
// its own boot time (root/stat) when root is not Root (a test's fake
// tree), read at each call.
func StartedAtIn(root string, st Stat) (time.Time, error) {
	if root == Root {
		return StartedAt(st)
	}
	boot, err := readBoot(root)
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(st.StartTime) * (time.Second / userHZ)), nil
}

func readBoot(root string) (time.Time, error) {
	f, err := os.Open(root + "/stat")
	if err != nil {
		return time.Time{}, fmt.Errorf("proc: boot time: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("btime ")); ok {
			s, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("proc: boot time: %w", err)
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("proc: boot time: no btime in %s/stat", root)
}
