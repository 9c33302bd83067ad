package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// row is one line of the results table.
type row struct {
	Measure  string `json:"measure"`
	Bridge   string `json:"bridge"`
	Baseline string `json:"baseline"`
	Ratio    string `json:"ratio"`
	Target   string `json:"target"`
	Verdict  string `json:"verdict"`

	// Figure is the row's headline number (lower is better) in Unit, which
	// -baseline compares with the same row measured on the bridge of
	// another revision; 0 for rows it does not compare. A ratio up to
	// Slack, or a difference up to Floor, counts as no regression (the
	// noise of a loaded machine).
	Figure float64 `json:"figure,omitempty"`
	Unit   string  `json:"unit,omitempty"`
	Slack  float64 `json:"slack,omitempty"`
	Floor  float64 `json:"floor,omitempty"`
}

func verdict(ok bool, miss string) string {
	if ok {
		return "met"
	}
	return "missed: " + miss
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", msf(d)) }

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ---- cold start ----

// listTree lists every journal under root with its metadata (ReadDir and
// a stat per entry): what `ls -lR` does.
func listTree(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			if _, err := d.Info(); err == nil {
				n++
			}
		}
		return nil
	})
	return n, err
}

// decodeTree decodes every line of every journal under root once with
// plain encoding/json: what a naive tool does at start.
func decodeTree(root string) (files int, bytesRead int64, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		bytesRead += int64(len(data))
		return decodeLines(data)
	})
	return files, bytesRead, err
}

// decodeLines is the plain decode: every line into an `any`.
func decodeLines(data []byte) error {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data
		if i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("plain decode: %w", err)
		}
	}
	return nil
}

// coldStart starts the bridge over the corpus until every source sent its
// reset. With the history on, it then waits until the history wrote every
// fact the start-up handed it (lag: how long after ready) and reads its
// counters.
func coldStart(cfg *config, c *corpus) (cs coldRun, err error) {
	t0, c0 := time.Now(), cpuTime()
	b, err := startReady(cfg, c, 0, 5*time.Minute)
	if err != nil {
		return cs, err
	}
	defer b.stop()
	cs.wall, cs.cpu, cs.sessions = time.Since(t0), cpuTime()-c0, b.sessions
	if b.hist == nil {
		return cs, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t1 := time.Now()
	if err := b.hist.Sync(ctx); err != nil {
		return cs, fmt.Errorf("history sync: %w", err)
	}
	cs.lag, cs.open = time.Since(t1), b.histOpen
	cs.hist, err = b.historyCounts()
	return cs, err
}

// coldRun is one cold start's measures.
type coldRun struct {
	wall, cpu time.Duration
	sessions  map[string]int
	lag       time.Duration    // the history's writes after ready (history on)
	open      [2]time.Duration // history.Open's wall and CPU time (history on)
	hist      historyCounts    // the history's counters then
}

func phaseCold(cfg *config, c *corpus) ([]row, error) {
	if !cfg.bridgeOnly {
		// Warm the page cache for every contender alike.
		if _, _, err := decodeTree(c.Root); err != nil {
			return nil, err
		}
	}
	var list, listCPU, dec, decCPU, bridge, bridgeCPU, lag, open, openCPU []time.Duration
	var last coldRun
	for range cfg.Repeat {
		if !cfg.bridgeOnly {
			t0, c0 := time.Now(), cpuTime()
			n, err := listTree(c.Root)
			if err != nil {
				return nil, err
			}
			list, listCPU = append(list, time.Since(t0)), append(listCPU, cpuTime()-c0)
			if n != c.Old+c.Recent {
				return nil, fmt.Errorf("listed %d journals, want %d", n, c.Old+c.Recent)
			}
		}
		cs, err := coldStart(cfg, c)
		if err != nil {
			return nil, err
		}
		bridge, bridgeCPU, lag, last = append(bridge, cs.wall), append(bridgeCPU, cs.cpu), append(lag, cs.lag), cs
		open, openCPU = append(open, cs.open[0]), append(openCPU, cs.open[1])
	}
	for range max(1, cfg.Repeat/2) {
		if cfg.bridgeOnly {
			break
		}
		t0, c0 := time.Now(), cpuTime()
		if _, _, err := decodeTree(c.Root); err != nil {
			return nil, err
		}
		dec, decCPU = append(dec, time.Since(t0)), append(decCPU, cpuTime()-c0)
	}
	if got := last.sessions["claude-code"] + last.sessions["codex"]; got != c.Recent {
		return nil, fmt.Errorf("the bridge reported %d sessions at start, want the %d recent ones", got, c.Recent)
	}
	mb, mbc := median(bridge), median(bridgeCPU)
	what := fmt.Sprintf("%d old + %d recent journals, %.0f MiB", c.Old, c.Recent, float64(c.Bytes)/(1<<20))
	withCPU := func(wall, cpu time.Duration) string { return ms(wall) + " (" + ms(cpu) + " CPU)" }
	rows := []row{{Measure: "cold start to ready (" + what + ") vs decoding all once", Bridge: withCPU(mb, mbc),
		// CPU time: the wall time of tens of ms swings with the load.
		Figure: msf(mbc), Unit: "ms CPU", Slack: 1.25}}
	if !cfg.bridgeOnly {
		ml, md, mlc, mdc := median(list), median(dec), median(listCPU), median(decCPU)
		r := float64(mb) / float64(md)
		rows[0].Baseline = withCPU(md, mdc) + ", encoding/json, every line"
		rows[0].Ratio = fmt.Sprintf("%.3f× (CPU: %.3f×)", r, float64(mbc)/float64(mdc))
		rows[0].Target, rows[0].Verdict = "≤ 0.1×", verdict(r <= 0.1, fmt.Sprintf("%.2f× the target", r/0.1))
		rows = append(rows, row{Measure: "cold start to ready vs listing the tree", Bridge: withCPU(mb, mbc), Baseline: withCPU(ml, mlc) + ", ReadDir + stat",
			Ratio: fmt.Sprintf("%.1f× (CPU: %.1f×)", float64(mb)/float64(ml), float64(mbc)/float64(mlc)), Target: "—", Verdict: "—"})
	}
	if cfg.History {
		// Last, so that the rows compared with history off line up.
		h := last.hist
		rows = append(rows, row{
			Measure: "history after the cold start: the start-up scan's facts written, and how long after ready (median of the starts; the first start writes into an empty history, the others retell it); opening the database, part of the cold start",
			Bridge: fmt.Sprintf("%.0f facts written %s after ready (max %s), %.0f dropped; the database opened in %s",
				h.written, ms(median(lag)), ms(slices.Max(lag)), h.dropped, withCPU(median(open), median(openCPU))),
			Baseline: "—", Ratio: "—",
			Target:  "no fact dropped",
			Verdict: verdict(h.dropped == 0, fmt.Sprintf("%.0f facts dropped", h.dropped)),
		})
	}
	return rows, nil
}

// ---- ingest ----

func phaseIngest(cfg *config, root string) ([]row, error) {
	var rows []row
	for _, kind := range []string{kindClaude, kindCodex} {
		r, err := ingestOne(cfg, root, kind)
		if err != nil {
			return nil, fmt.Errorf("ingest %s: %w", kind, err)
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// ingestOne measures one large journal appended live (every event
// published to the stream as it comes) and the same journal read at a
// start-up scan (folded, then one reset), each against the plain decode.
func ingestOne(cfg *config, root, kind string) ([]row, error) {
	dir, err := os.MkdirTemp(root, "ingest-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	c := &corpus{Root: dir, ClaudeDir: filepath.Join(dir, "claude"), CodexHome: filepath.Join(dir, "codex")}
	for _, d := range []string{filepath.Join(c.ClaudeDir, "projects", "-home-bench-ingest"), filepath.Join(c.CodexHome, "sessions", "2026", "11", "30")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("make dirs: %w", err)
		}
	}
	id := sessionUUID(kind, 999999)
	marker := "bench-ingest-end-" + kind
	data, err := longJournal(kind, id, cfg.ingestBytes, marker)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(c.ClaudeDir, "projects", "-home-bench-ingest", id+".jsonl")
	if kind == kindCodex {
		p = filepath.Join(c.CodexHome, "sessions", "2026", "11", "30", "rollout-2026-11-30T10-00-00-"+id+".jsonl")
	}
	mbs := func(d time.Duration) float64 { return float64(len(data)) / (1 << 20) / d.Seconds() }

	var base, baseCPU, live, liveCPU, scan, scanCPU []time.Duration
	var records, recBytes int
	for range cfg.Repeat {
		t0, c0 := time.Now(), cpuTime()
		if err := decodeLines(data); err != nil {
			return nil, err
		}
		base = append(base, time.Since(t0))
		baseCPU = append(baseCPU, cpuTime()-c0)

		// Live: appended in 1 MiB writes after the bridge is ready.
		b, err := startReady(cfg, c, 1<<17, time.Minute)
		if err != nil {
			return nil, err
		}
		t0, c0 = time.Now(), cpuTime()
		if err := appendChunks(p, data, 1<<20); err != nil {
			b.stop()
			return nil, err
		}
		at, n, nb, err := b.waitFor([]byte(marker), 5*time.Minute)
		b.stop()
		if err != nil {
			return nil, err
		}
		live = append(live, at.Sub(t0))
		liveCPU = append(liveCPU, cpuTime()-c0)
		records, recBytes = n, nb

		// Scan: the same journal present when the bridge starts.
		t0, c0 = time.Now(), cpuTime()
		b, err = startReady(cfg, c, 0, 5*time.Minute)
		d, dc := time.Since(t0), cpuTime()-c0
		if err != nil {
			return nil, err
		}
		b.stop()
		scan, scanCPU = append(scan, d), append(scanCPU, dc)
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("remove journal: %w", err)
		}
	}
	name := "Claude Code transcript"
	if kind == kindCodex {
		name = "Codex rollout"
	}
	mbase, mbaseCPU := mbs(median(base)), mbs(median(baseCPU))
	mk := func(what string, wall, cpu []time.Duration) row {
		mb, mc := mbs(median(wall)), mbs(median(cpu))
		r := mb / mbase
		return row{
			Measure:  what,
			Bridge:   fmt.Sprintf("%.0f MB/s (%.0f MB per CPU-second)", mb, mc),
			Baseline: fmt.Sprintf("%.0f MB/s (%.0f MB per CPU-second; encoding/json per line)", mbase, mbaseCPU),
			Ratio:    fmt.Sprintf("%.2f× (CPU: %.2f×)", r, mc/mbaseCPU), Target: "≥ 2×",
			Verdict: verdict(r >= 2, fmt.Sprintf("%.0f%% of the target", 100*r/2)),
		}
	}
	return []row{
		mk(fmt.Sprintf("ingest of one live %s (%.0f MiB appended after start; %d stream records, %.0f MiB of stream data)",
			name, float64(len(data))/(1<<20), records, float64(recBytes)/(1<<20)), live, liveCPU),
		mk(fmt.Sprintf("ingest of the same %s at a start-up scan (folded, then one reset)", name), scan, scanCPU),
	}, nil
}

// appendChunks creates p and appends data in chunks, as a live writer does.
func appendChunks(p string, data []byte, chunk int) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	for len(data) > 0 {
		n := min(chunk, len(data))
		if _, err := f.Write(data[:n]); err != nil {
			f.Close()
			return fmt.Errorf("append: %w", err)
		}
		data = data[n:]
	}
	return f.Close()
}
