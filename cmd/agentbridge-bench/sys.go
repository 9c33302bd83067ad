package main

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
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

// memStatus returns VmRSS and VmHWM of this process in bytes.
func memStatus() (rss, hwm uint64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
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
			rss = n << 10
		case "VmHWM":
			hwm = n << 10
		}
	}
	return rss, hwm
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
