package main

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/example"
	journals "github.com/agentbridge/agentbridge/sources/example/demo"
)

// Pace of the demo at --speed 1.
const (
	demoMinGap  = 500 * time.Millisecond // at least this between two records of a session
	demoMaxGap  = 2 * time.Second        // at most this, however long the agent took
	demoStagger = 4 * time.Second        // between the starts of two sessions
	demoRest    = 15 * time.Second       // with --loop: before the journals are removed and replayed
	demoLinger  = 30 * time.Second       // how long an exited session stays, unless --linger says otherwise
)

func newDemoCmd(a *app) *cobra.Command {
	var speed float64
	var loop bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "replay the bundled example journals live, with no agent installed",
		Long: `Serve a real bridge with only the example source on, reading a temporary
home into which the journals bundled in the binary are written record by
record at a human pace: sessions appear, run tools, wait for approval, spawn
subagents, finish, fail and exit.

The demo serves at 127.0.0.1:7391 when that is free, else at a free loopback
port, and records its address in the state directory while it runs, so that
"agentbridge sessions", "watch" and "open" find it without --addr.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(speed > 0) || math.IsInf(speed, 0) {
				return usagef("--speed must be a positive number")
			}
			return a.demo(cmd.Context(), cmd.Flags(), speed, loop)
		},
	}
	fs := cmd.Flags()
	fs.String("listen", config.DefaultListen, "`host:port` to serve on (when it is taken: a free loopback port)")
	fs.Duration("linger", demoLinger, "how long exited sessions stay listed")
	fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.Float64Var(&speed, "speed", 1, "replay speed factor (2 = twice as fast)")
	fs.BoolVar(&loop, "loop", true, "after a pause, remove the journals (their sessions stop) and replay them again; --loop=false replays once")
	mustComplete(cmd, "log-level", fixedCompletions("debug", "info", "warn", "error"))
	return cmd
}

// demo serves like serve, with the example source reading a temporary
// home into which the journals bundled in sources/example/demo are written
// record by record, at a human pace. The other built-in sources are off.
func (a *app) demo(ctx context.Context, flags *pflag.FlagSet, speed float64, loop bool) error {
	stdout := a.stdout
	cfg, err := config.Load(flags, a.env)
	if err != nil {
		return err
	}
	home, err := os.MkdirTemp("", "agentbridge-demo-")
	if err != nil {
		return fmt.Errorf("demo home: %w", err)
	}
	defer os.RemoveAll(home)
	dir := example.SessionsDir(home)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("demo home: %w", err)
	}
	// Only the example agent, in its temporary home: every other
	// registered source is off, so the demo never reads the user's agents.
	on, off := true, false
	cfg.Sources = map[string]config.SourceSwitch{}
	for _, r := range sources.Registered() {
		cfg.Sources[r.Info.ID] = config.SourceSwitch{Enabled: &off}
	}
	cfg.Sources[example.ID] = config.SourceSwitch{Enabled: &on, Home: home}
	if !flags.Changed("linger") {
		cfg.Linger = demoLinger
	}
	opt := serveOptions{listening: func(addr string) func() {
		remove, err := recordDemoAddr(cfg.StateDir, addr)
		if err != nil {
			fmt.Fprintf(a.stderr, "agentbridge demo: %v; clients need --addr %s\n", err, addr)
		}
		return remove
	}}
	if cfg.Listen == config.DefaultListen {
		opt.fallbackListen = "127.0.0.1:0"
	}

	names, _ := bundledJournals(journals.Journals)
	fmt.Fprintf(stdout, "agentbridge demo: replaying %d example sessions into %s (EXAMPLE_AGENT_HOME)\n", len(names), home)
	fmt.Fprintln(stdout, "agentbridge demo: `agentbridge open` opens the dashboard, `agentbridge sessions` lists the sessions; Ctrl-C stops")

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := replayJournals(ctx, journals.Journals, dir, speed, loop); err == nil {
			fmt.Fprintln(stdout, "agentbridge demo: every journal replayed; Ctrl-C stops")
		}
	})
	err = a.serve(ctx, cfg, opt)
	cancel()
	wg.Wait()
	return err
}

// bundledJournals lists the journals of fsys, sorted.
func bundledJournals(fsys fs.FS) ([]string, error) {
	names, err := fs.Glob(fsys, "*.jsonl")
	slices.Sort(names)
	return names, err
}

// replayJournals writes every journal of fsys into dir, each session
// starting demoStagger after the previous one, each record after the gap
// its timestamps show, kept between demoMinGap and demoMaxGap, all divided
// by speed. Timestamps are rewritten to the time of writing. With loop it
// then rests, removes the journals (their sessions stop) and starts over.
// It returns ctx's error when ctx ends, nil when done.
func replayJournals(ctx context.Context, fsys fs.FS, dir string, speed float64, loop bool) error {
	names, err := bundledJournals(fsys)
	if err != nil {
		return fmt.Errorf("bundled journals: %w", err)
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speed) }
	for {
		var wg sync.WaitGroup
		errs := make([]error, len(names))
		for i, name := range names {
			wg.Go(func() {
				errs[i] = replayOne(ctx, fsys, name, dir, scale(time.Duration(i)*demoStagger), scale)
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		if !loop {
			return nil
		}
		if err := sleepCtx(ctx, scale(demoRest)); err != nil {
			return err
		}
		for _, name := range names {
			_ = os.Remove(filepath.Join(dir, name))
		}
		if err := sleepCtx(ctx, scale(demoMinGap*4)); err != nil {
			return err
		}
	}
}

var tsField = regexp.MustCompile(`"ts":"[^"]*"`)

// replayOne appends the records of one journal to dir/name at its pace.
func replayOne(ctx context.Context, fsys fs.FS, name, dir string, start time.Duration, scale func(time.Duration) time.Duration) error {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return fmt.Errorf("bundled journal: %w", err)
	}
	if err := sleepCtx(ctx, start); err != nil {
		return err
	}
	var prev time.Time
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		ts := recordTime(line)
		if i > 0 {
			gap := demoMinGap
			if !ts.IsZero() && !prev.IsZero() {
				gap = min(max(ts.Sub(prev), demoMinGap), demoMaxGap)
			}
			if err := sleepCtx(ctx, scale(gap)); err != nil {
				return err
			}
		}
		prev = ts
		now := `"ts":"` + time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"`
		line = tsField.ReplaceAllLiteralString(line, now)
		if err := appendLine(filepath.Join(dir, name), line); err != nil {
			return err
		}
	}
	return nil
}

// recordTime is the record's "ts", or zero.
func recordTime(line string) time.Time {
	m := tsField.FindString(line)
	if m == "" {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, strings.TrimSuffix(strings.TrimPrefix(m, `"ts":"`), `"`))
	return t
}

// appendLine appends one record the way an agent does: one write of the
// whole line.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("demo journal: %w", err)
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("demo journal: %w", err)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
