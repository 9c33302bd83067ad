package proc

import (
	"os"
	"testing"
)

func TestParseStatOddCommandName(t *testing.T) {
	line := []byte("4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 11 0 987654 0 0")
	st, err := parseStat(4242, line)
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID != 17 || st.StartTime != 987654 || st.Threads != 11 {
		t.Fatalf("got %+v, want ppid 17 start 987654 threads 11", st)
	}
}

func TestParseStatMalformed(t *testing.T) {
	for _, in := range []string{"", "1 (x", "1 (x) S 1 2"} {
		if _, err := parseStat(1, []byte(in)); err == nil {
			t.Errorf("parseStat(%q): want error", in)
		}
	}
}

func TestReadStatSelf(t *testing.T) {
	st, err := ReadStat("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID != os.Getppid() {
		t.Fatalf("ppid = %d, want %d", st.PPID, os.Getppid())
	}
	if _, err := ReadStat("/proc", 0x3fffff); err != ErrNoProcess {
		t.Fatalf("missing pid: err = %v, want ErrNoProcess", err)
	}
}
