package main

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	rtrace "runtime/trace"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ---- idle ----

func phaseIdle(cfg *config, c *corpus) ([]row, error) {
	var baseCPU time.Duration
	var baseWakes, baseSysmon uint64
	dirs, err := dirsUnder(c.Root)
	if err != nil {
		return nil, err
	}
	if !cfg.bridgeOnly {
		if baseCPU, baseWakes, baseSysmon, err = bareIdle(cfg, dirs); err != nil {
			return nil, err
		}
	}

	b, url, err := startServing(cfg, c)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := dial(ctx, loopbackClient(), url+"/")
	if err != nil {
		return nil, err
	}
	go cl.read(true, nil)
	<-cl.ready
	runtime.GC()
	time.Sleep(cfg.settle)
	pings0 := cl.pings.Load()
	cpu, wakes, sysmon := measureIdle(cfg.Idle, "bridge", cfg.IdleTrace)
	pings := cl.pings.Load() - pings0
	share := cpu.Seconds() / cfg.Idle.Seconds()
	return []row{{
		Measure: fmt.Sprintf("idle over %v: %d journals in %d directories watched, 1 stream client", cfg.Idle, c.Old+c.Recent, len(dirs)),
		Bridge: fmt.Sprintf("%.1f ms CPU (%.3f%% of a core), %d context switches (%d of them the Go runtime's sysmon thread), %d heartbeat(s) sent",
			float64(cpu.Microseconds())/1000, 100*share, wakes, sysmon, pings),
		Baseline: fmt.Sprintf("%.1f ms CPU, %d context switches (%d sysmon) (bare fsnotify watcher on the same directories)",
			float64(baseCPU.Microseconds())/1000, baseWakes, baseSysmon),
		Ratio: fmt.Sprintf("%+d context switches (%+d outside sysmon)", int64(wakes)-int64(baseWakes),
			(int64(wakes)-int64(sysmon))-(int64(baseWakes)-int64(baseSysmon))),
		Target:  "≈ 0 CPU; no wake-ups beyond the 15 s heartbeat",
		Verdict: verdict(share < 0.001, fmt.Sprintf("%.2f%% of a core", 100*share)),
		// Under a thousandth of a core either way is the target met: noise.
		Figure: msf(cpu), Unit: "ms CPU", Slack: 1.5, Floor: cfg.Idle.Seconds(),
	}}, nil
}

// dirsUnder lists the directories under root (root included).
func dirsUnder(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("walk corpus: %w", err)
	}
	return dirs, nil
}

// bareIdle is the idle phase's baseline: a bare fsnotify watcher on dirs,
// doing nothing else.
func bareIdle(cfg *config, dirs []string) (cpu time.Duration, wakes, sysmon uint64, err error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("fsnotify: %w", err)
	}
	defer w.Close()
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			return 0, 0, 0, fmt.Errorf("watch corpus: %w", err)
		}
	}
	time.Sleep(cfg.settle)
	cpu, wakes, sysmon = measureIdle(cfg.Idle, "bare fsnotify watcher", "")
	return cpu, wakes, sysmon, nil
}

// measureIdle sleeps for d and returns the process's CPU time and context
// switches meanwhile. It writes to stderr what each thread did in the
// window (context switches, CPU ticks, the syscall it sleeps in at the
// end), labelled with what, and, when trace is set, a runtime trace of the
// window into that file (the tracer adds wake-ups of its own). It also
// returns the switches of the runtime's sysmon thread (sysmonTID).
func measureIdle(d time.Duration, what, trace string) (cpu time.Duration, switches, sysmon uint64) {
	var tf *os.File
	if trace != "" {
		var err error
		if tf, err = os.Create(trace); err != nil {
			fmt.Fprintln(os.Stderr, "idle trace:", err)
		} else if err := rtrace.Start(tf); err != nil {
			fmt.Fprintln(os.Stderr, "idle trace:", err)
			tf.Close()
			tf = nil
		}
	}
	t0 := threadStats()
	c0, w0 := cpuTime(), ctxSwitches()
	time.Sleep(d)
	c1, w1 := cpuTime(), ctxSwitches()
	t1 := threadStats()
	if tf != nil {
		rtrace.Stop()
		tf.Close()
	}
	ds := threadDeltas(t0, t1)
	sm := sysmonTID(slices.Collect(maps.Keys(t1)), os.Getpid())
	for _, t := range ds {
		if t.tid == sm {
			sysmon = t.switches
		}
	}
	fmt.Fprintf(os.Stderr, "idle, %s: %d threads, %d switched or ran in %v:\n%s", what, len(t1), len(ds), d, formatDeltas(ds, os.Getpid(), sm))
	return c1 - c0, w1 - w0, sysmon
}

// ---- memory ----

func phaseRSS(cfg *config, c *corpus) ([]row, error) {
	runtime.GC()
	rss0, _ := memStatus()
	b, url, err := startServing(cfg, c)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	if got := b.sessions["claude-code"] + b.sessions["codex"]; got != c.Recent {
		return nil, fmt.Errorf("the bridge holds %d sessions, want %d", got, c.Recent)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := loopbackClient()
	var clients []*sseClient
	for range cfg.RSSClients {
		cl, err := dial(ctx, client, url+"/")
		if err != nil {
			return nil, err
		}
		go cl.read(true, nil)
		clients = append(clients, cl)
	}
	for _, cl := range clients {
		<-cl.ready
	}
	time.Sleep(cfg.settle)
	mem := memNow()
	rss, hwm := mem.rss, mem.hwm
	var m runtimeMem
	m.read()
	mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
	return []row{{
		Measure: fmt.Sprintf("memory with %d live sessions and %d stream clients", c.Recent, cfg.RSSClients),
		Bridge: fmt.Sprintf("VmRSS %.1f MiB (%.1f anonymous, %.1f file pages), VmHWM %.1f MiB (Go heap in use %.1f MiB)",
			mib(rss), mib(mem.anon), mib(mem.file), mib(hwm), mib(m.heapInuse)),
		Baseline: fmt.Sprintf("%.1f MiB (this process before the bridge started)", mib(rss0)),
		Ratio:    fmt.Sprintf("%.1f× the baseline", float64(rss)/float64(rss0)),
		Target:   "RSS ≤ 80 MiB",
		Verdict:  verdict(mib(rss) <= 80, fmt.Sprintf("%.1f MiB over", mib(rss)-80)),
		Figure:   mib(rss), Unit: "MiB VmRSS", Slack: 1.1, Floor: 2,
	}}, nil
}
