package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
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

Each demo session runs as a real process of the demo (the demo binary in a
hidden waiting mode, in a directory under the temporary home named like the
journal's cwd), so it carries a pid and a cwd like a real agent's session and
shows in Terminay under the terminal that runs the demo. A session's process
ends when its journal records the exit, when --loop replays the journals
again, and when the demo stops.

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

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: the sessions' processes: %w", err)
	}
	procs := &demoProcs{self: self, root: home}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := replayJournals(ctx, journals.Journals, dir, speed, loop, procs); err == nil {
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
// by speed. Timestamps are rewritten to the time of writing. With procs,
// each session runs as a process procs starts (see replayOne). With loop it
// then rests, removes the journals (their sessions stop, their processes
// end) and starts over. It returns ctx's error when ctx ends, nil when
// done; the processes of a last round run on until ctx ends.
func replayJournals(ctx context.Context, fsys fs.FS, dir string, speed float64, loop bool, procs *demoProcs) error {
	names, err := bundledJournals(fsys)
	if err != nil {
		return fmt.Errorf("bundled journals: %w", err)
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speed) }
	for {
		var wg sync.WaitGroup
		errs := make([]error, len(names))
		stops := make([]func(), len(names))
		for i, name := range names {
			wg.Go(func() {
				stops[i], errs[i] = replayOne(ctx, fsys, name, dir, scale(time.Duration(i)*demoStagger), scale, procs)
			})
		}
		wg.Wait()
		stopAll := func() {
			for _, stop := range stops {
				if stop != nil {
					stop()
				}
			}
		}
		for _, err := range errs {
			if err != nil {
				stopAll()
				return err
			}
		}
		if !loop {
			go func() { <-ctx.Done(); stopAll() }() // the sessions live on with the demo
			return nil
		}
		if err := sleepCtx(ctx, scale(demoRest)); err != nil {
			stopAll()
			return err
		}
		for _, name := range names {
			_ = os.Remove(filepath.Join(dir, name))
		}
		stopAll()
		if err := sleepCtx(ctx, scale(demoMinGap*4)); err != nil {
			return err
		}
	}
}

var tsField = regexp.MustCompile(`"ts":"[^"]*"`)

// replayOne appends the records of one journal to dir/name at its pace.
// With procs, the session record starts the session's process and names
// its pid and its directory (in place of the journal's cwd), and an exit
// record ends it once written. It returns how to end the process still
// running (nil: none).
func replayOne(ctx context.Context, fsys fs.FS, name, dir string, start time.Duration, scale func(time.Duration) time.Duration, procs *demoProcs) (stop func(), err error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("bundled journal: %w", err)
	}
	if err := sleepCtx(ctx, start); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && stop != nil {
			stop()
			stop = nil
		}
	}()
	var prev time.Time
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		ts := recordTime(line)
		if i > 0 {
			gap := demoMinGap
			if !ts.IsZero() && !prev.IsZero() {
				gap = min(max(ts.Sub(prev), demoMinGap), demoMaxGap)
			}
			if err := sleepCtx(ctx, scale(gap)); err != nil {
				return stop, err
			}
		}
		prev = ts
		now := `"ts":"` + time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"`
		line = tsField.ReplaceAllLiteralString(line, now)
		kind := recordType(line)
		if procs != nil && kind == "session" && stop == nil {
			if line, stop, err = procs.startFor(ctx, line); err != nil {
				return stop, err
			}
		}
		if err := appendLine(filepath.Join(dir, name), line); err != nil {
			return stop, err
		}
		if kind == "exit" && stop != nil {
			stop()
			stop = nil
		}
	}
	return stop, nil
}

// recordType is the record's "type", or "".
func recordType(line string) string {
	var r struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(line), &r)
	return r.Type
}

// demoAgentCmd is the hidden subcommand the demo runs as each session's
// process.
const demoAgentCmd = "demo-agent"

// newDemoAgentCmd is the demo sessions' stand-in for an agent's process:
// it does nothing and ends when its standard input closes (the demo closes
// it, or the demo is gone).
func newDemoAgentCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    demoAgentCmd,
		Short:  "the process of one demo session: waits until its standard input closes",
		Hidden: true,
		Args:   noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := io.Copy(io.Discard, a.stdin)
			return err
		},
	}
}

// demoProcs starts the demo sessions' processes: the demo's own
// executable in its demo-agent mode, in a directory under root named like
// the journal's cwd, so that a session carries a live pid and a real cwd.
type demoProcs struct {
	self string // the executable
	root string // the sessions' directories are made under it
}

// startFor starts the process of the session whose session record is
// line, and returns the record naming its pid and directory, and how to
// end the process (close its standard input, then wait; the context kills
// it at the latest).
func (p *demoProcs) startFor(ctx context.Context, line string) (string, func(), error) {
	var rec map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		return "", nil, fmt.Errorf("demo journal: %w", err)
	}
	var cwd string
	_ = json.Unmarshal(rec["cwd"], &cwd)
	dir := filepath.Join(p.root, "projects", filepath.Base(filepath.Clean("/"+cwd)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("demo session directory: %w", err)
	}
	cmd := exec.CommandContext(ctx, p.self, demoAgentCmd)
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, fmt.Errorf("demo session process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("demo session process: %w", err)
	}
	stop := sync.OnceFunc(func() {
		_ = in.Close()
		_ = cmd.Wait()
	})
	rec["cwd"], _ = json.Marshal(dir)
	rec["pid"], _ = json.Marshal(cmd.Process.Pid)
	out, err := json.Marshal(rec)
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("demo journal: %w", err)
	}
	return string(out), stop, nil
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
