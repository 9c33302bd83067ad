package main

import (
	"runtime"
	"testing"

	"github.com/agentbridge/agentbridge/internal/testenv"
)

func TestSysmonTID(t *testing.T) {
	for _, tc := range []struct {
		name string
		tids []int
		pid  int
		want int
	}{
		{name: "next id", tids: []int{100, 101, 102, 105}, pid: 100, want: 101},
		{name: "ids taken by another process in between", tids: []int{105, 100, 103}, pid: 100, want: 103},
		{name: "ids wrapped around", tids: []int{100, 7, 3}, pid: 100, want: 3},
		{name: "only the main thread", tids: []int{100}, pid: 100, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sysmonTID(tc.tids, tc.pid); got != tc.want {
				t.Errorf("sysmonTID(%v, %d) = %d, want %d", tc.tids, tc.pid, got, tc.want)
			}
		})
	}
}

func TestSyscallName(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("syscall numbers are amd64's")
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{in: []string{"202", "0xe45d38", "0x80", "0x0", "0x0", "0x0", "0x0"}, want: "futex"},
		{in: []string{"202", "0xe48e80", "0x80", "0x0", "0xc000123f08", "0x0", "0x0"}, want: "futex(timed)"},
		{in: []string{"281", "0x6", "0x7ffd", "0x80", "0x3a97", "0x0", "0x0"}, want: "epoll_wait"},
		{in: []string{"35", "0x7ffd", "0x0"}, want: "nanosleep"},
		{in: []string{"running"}, want: "running"},
		{in: nil, want: "?"},
	} {
		if got := syscallName(tc.in); got != tc.want {
			t.Errorf("syscallName(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestThreadStatsSeesThisProcess(t *testing.T) {
	ts := threadStats()
	if len(ts) == 0 {
		testenv.Missing(t, "no /proc/self/task here")
	}
	var sw uint64
	for _, s := range ts {
		sw += s.switches
	}
	if sw == 0 {
		t.Errorf("no context switches over %d threads of a running test process", len(ts))
	}
}
