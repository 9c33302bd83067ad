package live

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	repoRoot string // the repository root
	workDir  string // per-run scratch: the agentbridge binary
)

func TestMain(m *testing.M) {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "live:", err)
		os.Exit(1)
	}
	repoRoot = filepath.Dir(filepath.Dir(wd))
	workDir, err = os.MkdirTemp("", "agentbridge-live-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "live:", err)
		os.Exit(1)
	}
	if err := useLatest(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	code := m.Run()
	os.RemoveAll(workDir)
	printTable()
	if err := writeReport(); err != nil {
		fmt.Fprintln(os.Stderr, "live:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// loadFactor stretches the bound of every wait of the rig (the screen, the
// bridge's state, the model server's requests). The waits return as soon
// as what they wait for happens, so a passing run is no slower; the
// bounds only decide when a wait counts as failed, and a 2-core machine
// running the suite beside go test -race (CI's load, and more) takes
// several times longer for a TUI to start than a quiet one.
const loadFactor = 4

// slow is d stretched by loadFactor.
func slow(d time.Duration) time.Duration { return d * loadFactor }

// enabled skips the test unless the live suite was asked for.
func enabled(t *testing.T) {
	t.Helper()
	if os.Getenv("AGENTBRIDGE_LIVE") == "" {
		t.Skip("the live suite runs with AGENTBRIDGE_LIVE=1 (make live)")
	}
	for _, tool := range []string{"tmux", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			mustHave(t, "%s is not installed", tool)
		}
	}
}

// keepHome copies an agent's home to $AGENTBRIDGE_LIVE_KEEP/<test name>
// when the test ends, for a look after the run. Register it before the
// CLI starts: cleanups run last registered first, so this one runs after
// the CLI is gone.
func keepHome(t *testing.T, dir string) {
	keep := os.Getenv("AGENTBRIDGE_LIVE_KEEP")
	if keep == "" {
		return
	}
	t.Cleanup(func() {
		dst := filepath.Join(keep, strings.NewReplacer("/", "_", " ", "_", ":", "").Replace(t.Name()))
		os.RemoveAll(dst)
		os.MkdirAll(dst, 0o755)
		exec.Command("cp", "-a", dir, dst).Run()
	})
}

// ---- the table of scenarios × agents ----

var (
	resultsMu sync.Mutex
	results   = map[string]map[string]string{} // scenario → CLI label → result
	columns   []string
	rows      []string
)

// scenario runs one scenario as a subtest and records its result in the
// table, in the row name and the column of the CLI (and mode) it ran.
func scenario(t *testing.T, column, name string, f func(t *testing.T)) {
	t.Helper()
	start := time.Now()
	var res string
	t.Run(name, func(t *testing.T) {
		defer func() {
			switch {
			case t.Skipped():
				res = "skip"
			case t.Failed():
				res = "FAIL"
			default:
				res = fmt.Sprintf("ok %.0fs", time.Since(start).Seconds())
			}
		}()
		f(t)
	})
	record(column, name, res)
}

// notApplicable marks a scenario that an agent (or mode) does not have.
func notApplicable(column, name string) { record(column, name, "n/a") }

func record(column, name, res string) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if results[name] == nil {
		results[name] = map[string]string{}
		rows = append(rows, name)
	}
	if !contains(columns, column) {
		columns = append(columns, column)
	}
	results[name][column] = res
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func printTable() {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(rows) == 0 {
		return
	}
	sort.Strings(columns)
	w0 := len("scenario")
	for _, r := range rows {
		w0 = max(w0, len(r))
	}
	widths := make([]int, len(columns))
	for i, c := range columns {
		widths[i] = len(c)
	}
	var b strings.Builder
	line := func(first string, cells []string) {
		fmt.Fprintf(&b, "| %-*s |", w0, first)
		for i, c := range cells {
			fmt.Fprintf(&b, " %-*s |", widths[i], c)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintln(&b, "\nlive suite: scenarios × agents")
	line("scenario", columns)
	dash := make([]string, len(columns))
	for i := range dash {
		dash[i] = strings.Repeat("-", widths[i])
	}
	line(strings.Repeat("-", w0), dash)
	for _, r := range rows {
		cells := make([]string, len(columns))
		for i, c := range columns {
			cells[i] = results[r][c]
			if cells[i] == "" {
				cells[i] = "-"
			}
		}
		line(r, cells)
	}
	fmt.Print(b.String())
}
