package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge/client"
)

// ---- stream ----

// phaseStream appends a large Claude Code transcript (in 1 MiB writes)
// while one SSE client on loopback reads the stream with the handler's
// defaults, and counts how often the client is cut off for not keeping up
// (it then resumes from the last id it saw, as EventSource does) before it
// reads the record of the transcript's last line.
func phaseStream(cfg *config, root string) ([]row, error) {
	dir, err := os.MkdirTemp(root, "stream-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	c := &corpus{Root: dir, ClaudeDir: filepath.Join(dir, "claude"), CodexHome: filepath.Join(dir, "codex")}
	pdir := filepath.Join(c.ClaudeDir, "projects", "-home-bench-stream")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, fmt.Errorf("make dirs: %w", err)
	}
	id := sessionUUID(kindClaude, 999998)
	marker := "bench-stream-end"
	data, err := longJournal(kindClaude, id, cfg.streamBytes, marker)
	if err != nil {
		return nil, err
	}
	b, url, err := startServing(cfg, c)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hc := loopbackClient()

	var cutoffs, records int
	var last uint64
	var seen atomic.Bool
	written := make(chan error, 1)
	t0 := time.Now()
	var at time.Time
	for first := true; !seen.Load(); first = false {
		if !first {
			cutoffs++
		}
		cl, err := dialFrom(ctx, hc, url+"/", last)
		if err != nil {
			return nil, err
		}
		if first {
			go func() { written <- appendChunks(filepath.Join(pdir, id+".jsonl"), data, 1<<20) }()
		}
		cl.read(false, func(ev client.Event) {
			records++
			last = ev.ID
			if !seen.Load() && bytes.Contains(ev.Data, []byte(marker)) {
				seen.Store(true)
				at = time.Now()
				cl.resp.Body.Close()
			}
		})
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the stream client did not see the end of the transcript (%d records, %d cut-offs)", records, cutoffs)
		}
	}
	if err := <-written; err != nil {
		return nil, err
	}
	mb := float64(len(data)) / (1 << 20)
	return []row{{
		Measure: fmt.Sprintf("stream client reading while %.0f MiB of Claude Code transcript are appended (SSE over loopback, default buffers)", mb),
		Bridge: fmt.Sprintf("%d cut-off(s); %d records read, the last line's after %.0f ms (%.0f MB/s)",
			cutoffs, records, float64(at.Sub(t0).Microseconds())/1000, mb/at.Sub(t0).Seconds()),
		Baseline: "—",
		Ratio:    "—",
		Target:   "0 cut-offs",
		Verdict:  verdict(cutoffs == 0, fmt.Sprintf("%d cut-off(s)", cutoffs)),
		// Wall time, on a pipeline that keeps both cores busy: it swings
		// with the load.
		Figure: msf(at.Sub(t0)), Unit: "ms to the last line", Slack: 1.5,
	}}, nil
}
