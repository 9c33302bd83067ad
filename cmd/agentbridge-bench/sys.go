package main

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newServer(h http.Handler) *httptest.Server {
	s := httptest.NewUnstartedServer(h)
	s.Start()
	return s
}

// runtimeMem is the part of runtime.MemStats the bench reads.
type runtimeMem struct {
	mallocs   uint64
	heapInuse uint64
}

func (m *runtimeMem) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.mallocs, m.heapInuse = ms.Mallocs, ms.HeapInuse
}

// cpuTime is this process's user+system CPU time (getrusage).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ctxSwitches sums the voluntary and involuntary context switches of every
// thread of this process: each is a thread going to sleep or being
// preempted, so over an idle window it counts wake-ups.
func ctxSwitches() uint64 {
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	var n uint64
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			for _, k := range []string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
				if v, ok := bytes.CutPrefix(line, []byte(k)); ok {
					x, _ := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
					n += x
				}
			}
		}
	}
	return n
}

// memory is this process's memory in bytes, from /proc/self/status:
// VmRSS, VmHWM, and RssAnon and RssFile, the parts of VmRSS that are
// anonymous memory (heaps) and file pages (the binary's code).
type memory struct{ rss, hwm, anon, file uint64 }

// memStatus returns VmRSS and VmHWM of this process in bytes.
func memStatus() (rss, hwm uint64) {
	m := memNow()
	return m.rss, m.hwm
}

// memNow reads the process's memory.
func memNow() (m memory) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			continue
		}
		n, _ := strconv.ParseUint(fs[0], 10, 64)
		switch k {
		case "VmRSS":
			m.rss = n << 10
		case "VmHWM":
			m.hwm = n << 10
		case "RssAnon":
			m.anon = n << 10
		case "RssFile":
			m.file = n << 10
		}
	}
	return m
}

// machine describes where the bench ran.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		if k, v, ok := strings.Cut(strings.SplitN(string(data), "\n", 2)[0], ":"); ok && k == "MemTotal" {
			if n, err := strconv.ParseUint(strings.Fields(v)[0], 10, 64); err == nil {
				mem = fmt.Sprintf(", %.0f GiB RAM", float64(n)/(1<<20))
			}
		}
	}
	load := ""
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = ", load average " + strings.Join(strings.Fields(string(data))[:3], " ")
	}
	return fmt.Sprintf("%d CPUs (%s)%s, %s %s/%s%s", runtime.NumCPU(), model, mem, runtime.Version(), runtime.GOOS, runtime.GOARCH, load)
}

// threadStat is one thread's counters from /proc/self/task/TID.
type threadStat struct {
	switches uint64 // voluntary + involuntary context switches
	ticks    uint64 // utime + stime, in clock ticks
	syscall  string // what it is blocked in now (name of the syscall, or "running")
}

// threadStats reads every thread of this process.
func threadStats() map[int]threadStat {
	dirs, _ := filepath.Glob("/proc/self/task/*")
	m := make(map[int]threadStat, len(dirs))
	for _, d := range dirs {
		tid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		var t threadStat
		if data, err := os.ReadFile(filepath.Join(d, "status")); err == nil {
			for _, line := range bytes.Split(data, []byte("\n")) {
				for _, k := range []string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
					if v, ok := bytes.CutPrefix(line, []byte(k)); ok {
						x, _ := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
						t.switches += x
					}
				}
			}
		}
		if data, err := os.ReadFile(filepath.Join(d, "stat")); err == nil {
			// Fields after the command, which ends at the last ')': state is
			// field 3, utime 14, stime 15.
			if i := bytes.LastIndexByte(data, ')'); i >= 0 {
				f := strings.Fields(string(data[i+1:]))
				if len(f) > 12 {
					u, _ := strconv.ParseUint(f[11], 10, 64)
					s, _ := strconv.ParseUint(f[12], 10, 64)
					t.ticks = u + s
				}
			}
		}
		if data, err := os.ReadFile(filepath.Join(d, "syscall")); err == nil {
			t.syscall = syscallName(strings.Fields(string(data)))
		}
		m[tid] = t
	}
	return m
}

// syscallName names the few syscalls a Go thread blocks in (amd64 numbers;
// elsewhere the number). A futex with a timeout (its fourth argument) is a
// timed sleep: on an idle Go process that is sysmon or a timer wait.
func syscallName(f []string) string {
	if len(f) == 0 {
		return "?"
	}
	if f[0] == "running" || runtime.GOARCH != "amd64" {
		return f[0]
	}
	switch f[0] {
	case "202":
		if len(f) > 4 && f[4] != "0x0" {
			return "futex(timed)"
		}
		return "futex"
	case "232", "281", "441":
		return "epoll_wait"
	case "35", "230":
		return "nanosleep"
	case "0":
		return "read"
	}
	return "syscall " + f[0]
}

// threadDelta is what one thread did between two threadStats.
type threadDelta struct {
	tid         int
	switches    uint64
	ticks       uint64
	blocked     string // at the end of the window
	new, exited bool
}

// threadDeltas lists the threads that switched or ran between a and b,
// busiest first.
func threadDeltas(a, b map[int]threadStat) []threadDelta {
	var out []threadDelta
	for tid, t1 := range b {
		t0, ok := a[tid]
		d := threadDelta{tid: tid, switches: t1.switches - t0.switches, ticks: t1.ticks - t0.ticks, blocked: t1.syscall, new: !ok}
		if d.switches > 0 || d.ticks > 0 || d.new {
			out = append(out, d)
		}
	}
	for tid, t0 := range a {
		if _, ok := b[tid]; !ok {
			out = append(out, threadDelta{tid: tid, exited: true, blocked: t0.syscall})
		}
	}
	slices.SortFunc(out, func(x, y threadDelta) int { return cmp.Compare(y.switches, x.switches) })
	return out
}

// sysmonTID guesses the runtime's sysmon thread among tids: the first
// thread the runtime creates (runtime.main starts it before anything
// else), so the lowest thread id above the process id; with ids wrapped
// around, the lowest other than the main thread.
func sysmonTID(tids []int, pid int) int {
	best, wrapped := 0, 0
	for _, t := range tids {
		switch {
		case t > pid && (best == 0 || t < best):
			best = t
		case t < pid && (wrapped == 0 || t < wrapped):
			wrapped = t
		}
	}
	if best == 0 {
		return wrapped
	}
	return best
}

// formatDeltas is one line per thread.
func formatDeltas(ds []threadDelta, self, sysmon int) string {
	var b strings.Builder
	for _, d := range ds {
		note := ""
		switch {
		case d.tid == sysmon:
			note = " (sysmon)"
		case d.tid == self:
			note = " (main thread)"
		case d.new:
			note = " (started in the window)"
		case d.exited:
			note = " (exited in the window)"
		}
		fmt.Fprintf(&b, "  tid %d: %d switches, %d ticks, now in %s%s\n", d.tid, d.switches, d.ticks, d.blocked, note)
	}
	return b.String()
}
