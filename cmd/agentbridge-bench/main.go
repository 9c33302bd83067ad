// Command agentbridge-bench measures the bridge against baselines taken in
// the same run and prints a Markdown table of the results with their
// ratios (docs/performance.md explains every row).
//
// It generates realistic Claude Code and Codex journals (rewritten copies
// of the recorded sessions in testdata/) in a temporary directory, runs the
// real hub, sse, sources/claudecode and sources/codex packages in-process,
// and measures:
//
//   - cold start to ready over old + recent journals, against listing them
//     and against decoding them all once with plain encoding/json;
//   - ingest of one large live journal per agent, against a plain
//     line-by-line encoding/json decode of the same bytes;
//   - append → stream latency through the SSE handler, against a bare
//     fsnotify reader;
//   - publish → delivered to 1, 100 and 1,000 stream clients, against a
//     bare r3labs/sse server, and that one encode serves every client;
//   - idle CPU and wake-ups with thousands of journals watched, against a
//     bare fsnotify watcher on the same directories;
//   - RSS with many live sessions and stream clients;
//   - cold start, append latency, idle and RSS again over the turn-heavy
//     workload (turns.go: journals in which every two records make a
//     turn), each also against the bridge of a baseline revision
//     (-baseline, baseline.go): the same phase, corpus and bench program,
//     built with that revision's packages, in the same run;
//   - every phase with the history kept (the bridge's default,
//     history.enabled) and, for -history-phases, the same phase again with
//     it off, right after, in the same run (history.go); and how long the
//     history's writer takes after a cold start, and whether it dropped
//     facts.
//
// Each phase runs in a fresh child process (the same binary), so that one
// phase's heap and goroutines do not colour the next one's numbers.
//
// Usage:
//
//	go run ./cmd/agentbridge-bench [-quick] [-old N] [-recent N] [-idle 30s] ...
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config holds the flags.
type config struct {
	Old, Recent  int
	MaxHistoryMB int
	IngestMB     int
	StreamMB     int
	Appends      int
	AppendGap    time.Duration
	FanoutEvents int
	Clients      []int
	Idle         time.Duration
	RSSSessions  int
	RSSClients   int
	Repeat       int
	Phases       []string
	Dir          string
	Keep         bool
	Profile      string
	IdleTrace    string
	InProcess    bool
	Turns        int    // turns per journal of the turn-heavy workload
	Baseline     string // revision whose bridge the baseline phases also run ("" none)
	BasePhases   []string
	History      bool     // the bridge keeps its history (history.enabled)
	HistPhases   []string // phases run again with the history off, to compare

	ingestBytes int           // IngestMB in bytes (tests set less)
	streamBytes int           // StreamMB in bytes (tests set less)
	settle      time.Duration // pause before idle and memory readings (tests set less)

	phase      string // child: the phase to run
	corpus     string // child: the corpus description file
	bridgeOnly bool   // child: measure the bridge only, not the phase's own baseline (a comparison run)
	stateDir   string // the phase's state directory (the history's database), made by runPhase
}

var allPhases = []string{"cold", "ingest", "stream", "latency", "fanout", "idle", "rss",
	"turns-cold", "turns-latency", "turns-idle", "turns-rss"}

// turnPhases are the phases of the turn-heavy workload, which -baseline
// runs on the baseline revision's bridge too by default.
var turnPhases = []string{"turns-cold", "turns-latency", "turns-idle", "turns-rss"}

// historyPhases are the phases run again with the history off by default:
// the live path (cold start, a large transcript streamed, append →
// stream) and the idle bridge (CPU, memory) of the normal workload, and
// the turn-heavy cold start, latency and memory (its idle window would add
// a minute for what the normal one already shows).
var historyPhases = []string{"cold", "stream", "latency", "idle", "rss", "turns-cold", "turns-latency", "turns-rss"}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentbridge-bench:", err)
		os.Exit(2)
	}
	if cfg.phase != "" {
		err = child(cfg, os.Stdout)
	} else {
		err = run(cfg, os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentbridge-bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("agentbridge-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small sizes and short windows (about a minute in all)")
	fs.IntVar(&cfg.Old, "old", 2000, "journals last written days ago (cold start, idle)")
	fs.IntVar(&cfg.Recent, "recent", 20, "journals written within the last minutes (cold start, idle)")
	fs.IntVar(&cfg.MaxHistoryMB, "max-history-mb", 200, "refuse to generate a corpus larger than this (MiB)")
	fs.IntVar(&cfg.IngestMB, "ingest-mb", 32, "size of the large live journal, per agent (MiB)")
	fs.IntVar(&cfg.StreamMB, "stream-mb", 96, "Claude Code transcript appended while a stream client reads (MiB)")
	fs.IntVar(&cfg.Appends, "appends", 200, "appends timed for the latency")
	fs.DurationVar(&cfg.AppendGap, "append-gap", 20*time.Millisecond, "mean time between appends (jittered ±50%)")
	fs.IntVar(&cfg.FanoutEvents, "fanout-events", 2048, "events published per fan-out run (a quarter of it with 1,000 clients)")
	clients := fs.String("clients", "1,100,1000", "stream client counts for the fan-out")
	fs.DurationVar(&cfg.Idle, "idle", 30*time.Second, "idle measurement window (the baseline takes as long)")
	fs.IntVar(&cfg.RSSSessions, "rss-sessions", 1000, "live sessions for the memory measurement")
	fs.IntVar(&cfg.RSSClients, "rss-clients", 100, "stream clients for the memory measurement")
	fs.IntVar(&cfg.Repeat, "repeat", 3, "runs of the cold start and ingest measures (the median is reported)")
	phases := fs.String("phases", strings.Join(allPhases, ","), "phases to run: "+strings.Join(allPhases, ","))
	fs.StringVar(&cfg.Dir, "dir", "", "where to make the temporary corpora (default: the system temp dir)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the generated corpora")
	fs.StringVar(&cfg.Profile, "profile", "", "write a CPU profile per phase (and a heap profile for rss and turns-rss) into this directory")
	fs.StringVar(&cfg.IdleTrace, "idle-trace", "", "write a runtime trace of the bridge's idle window to this file (go tool trace FILE)")
	fs.BoolVar(&cfg.InProcess, "inprocess", false, "run every phase in this process instead of a child process each")
	fs.IntVar(&cfg.Turns, "turns", 40, "turns per journal of the turn-heavy workload (two records each)")
	fs.StringVar(&cfg.Baseline, "baseline", "auto", "git revision whose bridge the -baseline-phases also run, in the same run (auto: the merge-base with main, or HEAD~ on main itself; none: no such baseline)")
	basePhases := fs.String("baseline-phases", strings.Join(turnPhases, ","), "phases run on the -baseline revision's bridge too")
	fs.BoolVar(&cfg.History, "history", true, "the bridge keeps its history, as agentbridge serve does by default (false: history.enabled false in every phase)")
	histPhases := fs.String("history-phases", strings.Join(historyPhases, ","), "phases run again with the history off, right after, to compare (none: no comparison)")
	fs.StringVar(&cfg.phase, "phase", "", "internal: run one phase (child process)")
	fs.StringVar(&cfg.corpus, "corpus", "", "internal: the corpus description of the phase")
	fs.BoolVar(&cfg.bridgeOnly, "bridge-only", false, "internal: measure only the bridge (a comparison run)")
	err := fs.Parse(args)
	if err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		def := func(name string, p *int, v int) {
			if !set[name] {
				*p = v
			}
		}
		def("old", &cfg.Old, 200)
		def("recent", &cfg.Recent, 10)
		def("ingest-mb", &cfg.IngestMB, 4)
		def("stream-mb", &cfg.StreamMB, 8)
		def("appends", &cfg.Appends, 50)
		def("fanout-events", &cfg.FanoutEvents, 512)
		def("rss-sessions", &cfg.RSSSessions, 200)
		def("rss-clients", &cfg.RSSClients, 20)
		def("repeat", &cfg.Repeat, 1)
		def("turns", &cfg.Turns, 20)
		if !set["idle"] {
			cfg.Idle = 5 * time.Second
		}
		if !set["clients"] {
			*clients = "1,100"
		}
	}
	cfg.ingestBytes = cfg.IngestMB << 20
	cfg.streamBytes = cfg.StreamMB << 20
	cfg.settle = 2 * time.Second
	for _, s := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-clients: %q is not a positive count", s)
		}
		cfg.Clients = append(cfg.Clients, n)
	}
	for _, p := range strings.Split(*phases, ",") {
		p = strings.TrimSpace(p)
		if !contains(allPhases, p) {
			return nil, fmt.Errorf("-phases: unknown phase %q", p)
		}
		cfg.Phases = append(cfg.Phases, p)
	}
	if cfg.Baseline == "none" {
		cfg.Baseline = ""
	}
	if cfg.BasePhases, err = phaseList("-baseline-phases", *basePhases); err != nil {
		return nil, err
	}
	if *histPhases == "none" {
		*histPhases = ""
	}
	if cfg.HistPhases, err = phaseList("-history-phases", *histPhases); err != nil {
		return nil, err
	}
	switch {
	case cfg.Turns < 1:
		return nil, errors.New("-turns must be ≥ 1")
	case cfg.Old < 0 || cfg.Recent < 1 || cfg.RSSSessions < 2:
		return nil, errors.New("-old must be ≥ 0, -recent ≥ 1, -rss-sessions ≥ 2")
	case cfg.IngestMB < 1 || cfg.StreamMB < 1 || cfg.Appends < 1 || cfg.FanoutEvents < 1 || cfg.Repeat < 1 || cfg.RSSClients < 1:
		return nil, errors.New("-ingest-mb, -appends, -fanout-events, -repeat and -rss-clients must be ≥ 1")
	case cfg.Idle <= 0 || cfg.AppendGap <= 0:
		return nil, errors.New("-idle and -append-gap must be positive")
	}
	return cfg, nil
}

// phaseList parses a comma-separated list of phases given to flag.
func phaseList(flag, list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !contains(allPhases, p) {
			return nil, fmt.Errorf("%s: unknown phase %q", flag, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// hasAny reports whether list holds any of want.
func hasAny(list, want []string) bool {
	for _, w := range want {
		if contains(list, w) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// run generates the corpora, runs every phase and prints the table.
func run(cfg *config, stdout, stderr io.Writer) error {
	root, err := os.MkdirTemp(cfg.Dir, "agentbridge-bench-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	if cfg.Keep {
		fmt.Fprintln(stderr, "corpora kept in", root)
	} else {
		defer os.RemoveAll(root)
	}
	if cfg.Profile != "" {
		if err := os.MkdirAll(cfg.Profile, 0o755); err != nil {
			return fmt.Errorf("profile dir: %w", err)
		}
	}
	var base *baseline
	if cfg.Baseline != "" && hasAny(cfg.Phases, cfg.BasePhases) {
		fmt.Fprintf(stderr, "building the bridge of %s…\n", cfg.Baseline)
		base, err = buildBaseline(cfg.Baseline, root)
		switch {
		case errors.Is(err, errNoCheckout) && cfg.Baseline == "auto":
			fmt.Fprintln(stderr, "no baseline revision: not in a git checkout")
		case err != nil:
			return err
		default:
			fmt.Fprintf(stderr, "baseline: %s\n", base.rev)
		}
	}
	var history, live, turnHistory, turnLive *corpus
	var rows []row
	started := time.Now()
	maxBytes := int64(cfg.MaxHistoryMB) << 20
	for _, ph := range cfg.Phases {
		var c *corpus
		switch ph {
		case "turns-cold", "turns-idle":
			if turnHistory == nil {
				fmt.Fprintf(stderr, "generating %d old + %d recent turn-heavy journals…\n", cfg.Old, cfg.Recent)
				if turnHistory, err = generateTurns(filepath.Join(root, "turns-history"), cfg.Old, cfg.Recent, cfg.Turns, maxBytes); err != nil {
					return err
				}
			}
			c = turnHistory
		case "turns-rss":
			if turnLive == nil {
				fmt.Fprintf(stderr, "generating %d live turn-heavy journals…\n", cfg.RSSSessions)
				if turnLive, err = generateTurns(filepath.Join(root, "turns-live"), 0, cfg.RSSSessions, cfg.Turns, maxBytes); err != nil {
					return err
				}
			}
			c = turnLive
		case "cold", "idle":
			if history == nil {
				fmt.Fprintf(stderr, "generating %d old + %d recent journals…\n", cfg.Old, cfg.Recent)
				if history, err = generate(filepath.Join(root, "history"), cfg.Old, cfg.Recent, int64(cfg.MaxHistoryMB)<<20); err != nil {
					return err
				}
			}
			c = history
		case "rss":
			if live == nil {
				fmt.Fprintf(stderr, "generating %d live journals…\n", cfg.RSSSessions)
				if live, err = generate(filepath.Join(root, "live"), 0, cfg.RSSSessions, int64(cfg.MaxHistoryMB)<<20); err != nil {
					return err
				}
			}
			c = live
		default:
			c = &corpus{Root: root}
		}
		// The corpus's dirty pages written back now, not during the
		// first phase that reads it (and not during this tree's run of a
		// phase the baseline revision runs after it).
		syscall.Sync()
		fmt.Fprintf(stderr, "phase %s…\n", ph)
		t0 := time.Now()
		var got []row
		if cfg.InProcess {
			got, err = runPhase(cfg, ph, c)
		} else {
			got, err = runChild(cfg, "", ph, c, root, stderr)
		}
		if err != nil {
			return fmt.Errorf("phase %s: %w", ph, err)
		}
		fmt.Fprintf(stderr, "phase %s done in %v\n", ph, time.Since(t0).Round(time.Millisecond))
		rows = append(rows, got...)
		if base != nil && contains(cfg.BasePhases, ph) {
			fmt.Fprintf(stderr, "phase %s on the bridge of %s…\n", ph, base.rev)
			bc := *cfg
			bc.bridgeOnly = true
			was, err := runChild(&bc, base.exe, ph, c, root, stderr)
			if err != nil {
				return fmt.Errorf("phase %s on the bridge of %s: %w", ph, base.rev, err)
			}
			rows = append(rows, compareRows(got, was, revisionComparison(base.rev))...)
		}
		if cfg.History && contains(cfg.HistPhases, ph) {
			fmt.Fprintf(stderr, "phase %s with the history off…\n", ph)
			off := *cfg
			off.History, off.bridgeOnly = false, true
			var was []row
			if cfg.InProcess {
				was, err = runPhase(&off, ph, c)
			} else {
				was, err = runChild(&off, "", ph, c, root, stderr)
			}
			if err != nil {
				return fmt.Errorf("phase %s with the history off: %w", ph, err)
			}
			rows = append(rows, compareRows(got, was, historyComparison)...)
		}
	}
	printTable(stdout, cfg, rows, time.Since(started))
	return nil
}

// runChild runs one phase in a child process of exe ("": this binary).
func runChild(cfg *config, exe, ph string, c *corpus, root string, stderr io.Writer) ([]row, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find own binary: %w", err)
		}
	}
	desc := filepath.Join(root, "corpus-"+ph+".json")
	data, _ := json.Marshal(c)
	if err := os.WriteFile(desc, data, 0o644); err != nil {
		return nil, fmt.Errorf("write corpus description: %w", err)
	}
	args := childArgs(cfg, ph, desc)
	cmd := exec.Command(exe, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("child process: %w", err)
	}
	var rows []row
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		return nil, fmt.Errorf("child output: %w", err)
	}
	return rows, nil
}

func childArgs(cfg *config, ph, desc string) []string {
	cl := make([]string, len(cfg.Clients))
	for i, n := range cfg.Clients {
		cl[i] = strconv.Itoa(n)
	}
	return []string{
		"-phase", ph, "-corpus", desc,
		"-dir", cfg.Dir,
		"-history=" + strconv.FormatBool(cfg.History),
		"-bridge-only=" + strconv.FormatBool(cfg.bridgeOnly),
		"-ingest-mb", strconv.Itoa(cfg.IngestMB),
		"-stream-mb", strconv.Itoa(cfg.StreamMB),
		"-appends", strconv.Itoa(cfg.Appends),
		"-append-gap", cfg.AppendGap.String(),
		"-fanout-events", strconv.Itoa(cfg.FanoutEvents),
		"-clients", strings.Join(cl, ","),
		"-idle", cfg.Idle.String(),
		"-rss-sessions", strconv.Itoa(cfg.RSSSessions),
		"-rss-clients", strconv.Itoa(cfg.RSSClients),
		"-repeat", strconv.Itoa(cfg.Repeat),
		"-turns", strconv.Itoa(cfg.Turns),
		"-profile", cfg.Profile,
		"-idle-trace", cfg.IdleTrace,
	}
}

// child runs the phase a parent asked for and writes its rows as JSON.
func child(cfg *config, stdout io.Writer) error {
	data, err := os.ReadFile(cfg.corpus)
	if err != nil {
		return fmt.Errorf("read corpus description: %w", err)
	}
	var c corpus
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("corpus description: %w", err)
	}
	rows, err := runPhase(cfg, cfg.phase, &c)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(rows)
}

// runPhase runs one phase here, with a CPU profile when asked, and with
// its state directory (removed after) when the history is on.
func runPhase(cfg *config, ph string, c *corpus) ([]row, error) {
	if cfg.History {
		dir, err := os.MkdirTemp(cfg.Dir, "agentbridge-bench-state-")
		if err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		defer os.RemoveAll(dir)
		pc := *cfg
		pc.stateDir = dir
		cfg = &pc
	}
	if cfg.Profile != "" && !cfg.bridgeOnly {
		f, err := os.Create(filepath.Join(cfg.Profile, ph+".cpu.pprof"))
		if err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	var rows []row
	var err error
	switch ph {
	case "cold":
		rows, err = phaseCold(cfg, c)
	case "ingest":
		rows, err = phaseIngest(cfg, c.Root)
	case "stream":
		rows, err = phaseStream(cfg, c.Root)
	case "latency":
		rows, err = phaseLatency(cfg, c.Root, false)
	case "turns-cold":
		rows, err = phaseCold(cfg, c)
	case "turns-latency":
		rows, err = phaseLatency(cfg, c.Root, true)
	case "turns-idle":
		rows, err = phaseIdle(cfg, c)
	case "turns-rss", "rss":
		rows, err = phaseRSS(cfg, c)
		if err == nil && cfg.Profile != "" && !cfg.bridgeOnly {
			if f, ferr := os.Create(filepath.Join(cfg.Profile, ph+".heap.pprof")); ferr == nil {
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
	case "fanout":
		rows, err = phaseFanout(cfg)
	case "idle":
		rows, err = phaseIdle(cfg, c)
	default:
		err = fmt.Errorf("unknown phase %q", ph)
	}
	if contains(turnPhases, ph) {
		for i := range rows {
			rows[i].Measure = fmt.Sprintf("turn-heavy (a turn per two records, %d turns per journal): %s", cfg.Turns, rows[i].Measure)
		}
	}
	return rows, err
}

// printTable writes the results as Markdown.
func printTable(w io.Writer, cfg *config, rows []row, took time.Duration) {
	fmt.Fprintf(w, "### agentbridge-bench, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "Machine: %s. Run took %v.\n\n", machine(), took.Round(time.Second))
	fmt.Fprintln(w, "| measure | agentbridge | baseline (same run) | ratio | target | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.Measure, r.Bridge, r.Baseline, r.Ratio, r.Target, r.Verdict)
	}
}
