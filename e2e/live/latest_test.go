package live

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

// make live-latest: with AGENTBRIDGE_LIVE_LATEST=1 the suite runs each CLI
// at the newest version the npm registry serves (`npm view PKG version`)
// instead of its pins, once per CLI; with AGENTBRIDGE_LIVE_REPORT=FILE it
// writes its scenarios × versions table to FILE as Markdown (docs/testing.md
// cites docs/live-latest.md). Not part of CI's gate: a new release may
// break a scenario, which is what it is for.

// useLatest replaces every pin with the newest published version when
// AGENTBRIDGE_LIVE_LATEST is set. A package whose version cannot be looked
// up keeps its pin, and the error says which.
func useLatest() error {
	if os.Getenv("AGENTBRIDGE_LIVE_LATEST") == "" {
		return nil
	}
	var errs []string
	latest := func(c agentCLI) agentCLI {
		v, err := npmLatest(c.Pkg)
		if err != nil {
			errs = append(errs, err.Error())
			return c
		}
		c.Version = v
		return c
	}
	claudeCLIs = []agentCLI{latest(claudeCLIs[0])}
	codexCLIs = []agentCLI{latest(codexCLIs[0])}
	copilotCLI = latest(copilotCLI)
	geminiCLI = latest(geminiCLI)
	qwenCLI = latest(qwenCLI)
	opencodeCLI = latest(opencodeCLI)
	piCLI = latest(piCLI)
	if len(errs) > 0 {
		return fmt.Errorf("live-latest: %s", strings.Join(errs, "; "))
	}
	return nil
}

// npmLatest asks the registry for the newest version of pkg.
func npmLatest(pkg string) (string, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("no npm on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "view", pkg, "version").Output()
	if err != nil {
		return "", fmt.Errorf("npm view %s version: %v", pkg, err)
	}
	v := strings.TrimSpace(string(out))
	if !semver.IsValid("v" + v) {
		return "", fmt.Errorf("npm view %s version: %q is not a version", pkg, v)
	}
	return v, nil
}

// writeReport writes the table of results as Markdown to
// $AGENTBRIDGE_LIVE_REPORT, with the versions run and the date.
func writeReport() error {
	path := os.Getenv("AGENTBRIDGE_LIVE_REPORT")
	if path == "" {
		return nil
	}
	resultsMu.Lock()
	defer resultsMu.Unlock()
	cols := append([]string(nil), columns...)
	sort.Strings(cols)
	var b strings.Builder
	fmt.Fprintf(&b, "# Live suite against the newest CLIs\n\n")
	fmt.Fprintf(&b, "Written by `make live-latest` on %s: the live suite (`e2e/live`) run once against the\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "newest version of each agent CLI that the npm registry served then, instead of the pinned\n")
	fmt.Fprintf(&b, "versions CI runs. `ok Ns` passed (in N seconds), `FAIL` failed, `skip` did not run (e.g. the CLI\n")
	fmt.Fprintf(&b, "could not be installed), `n/a` the CLI has no such scenario, `-` not run for that CLI.\n\n")
	b.WriteString("| scenario |")
	for _, c := range cols {
		fmt.Fprintf(&b, " %s |", c)
	}
	b.WriteString("\n|---|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteByte('\n')
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |", r)
		for _, c := range cols {
			cell := results[r][c]
			if cell == "" {
				cell = "-"
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
