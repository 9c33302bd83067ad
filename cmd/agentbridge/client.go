package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/client"
)

// clientFlags are the flags every client subcommand shares: where the
// bridge is and which config file says so.
func clientFlags(fs *pflag.FlagSet) {
	fs.String("addr", "", "bridge `host:port` (default $AGENTBRIDGE_ADDR, else the configured listen address)")
	fs.String("config", "", "YAML config `file` (default $XDG_CONFIG_HOME/agentbridge/config.yaml when present)")
}

// filterFlags are the session filters of GET /v1/sessions and /v1/events.
type filterFlags struct {
	sources, harnesses, statuses []string
	project                      string
	ancestorPID                  int
}

func (f *filterFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.sources, "source", nil, "only these source `ids` (comma list, repeatable)")
	fs.StringSliceVar(&f.harnesses, "harness", nil, "only these harness `ids` (comma list, repeatable)")
	fs.StringSliceVar(&f.statuses, "status", nil, "only these `statuses`: idle, running, waiting, blocked, done, exited")
	fs.StringVar(&f.project, "project", "", "only sessions in this project `dir` (at or below it, or in a linked Git worktree of it)")
	fs.IntVar(&f.ancestorPID, "ancestor-pid", 0, "only sessions whose process descends from `pid`")
}

// query adds the filters to q. A relative --project is taken from the
// working directory, as a user typing "--project ." means.
func (f *filterFlags) query(q url.Values) error {
	if len(f.sources) > 0 {
		q.Set("source", strings.Join(f.sources, ","))
	}
	if len(f.harnesses) > 0 {
		q.Set("harness", strings.Join(f.harnesses, ","))
	}
	if len(f.statuses) > 0 {
		q.Set("status", strings.Join(f.statuses, ","))
	}
	if f.project != "" {
		p, err := filepath.Abs(f.project)
		if err != nil {
			return fmt.Errorf("--project: %w", err)
		}
		q.Set("project", p)
	}
	if f.ancestorPID < 0 {
		return fmt.Errorf("--ancestor-pid: %d is not a process id", f.ancestorPID)
	}
	if f.ancestorPID > 0 {
		q.Set("ancestorPid", strconv.Itoa(f.ancestorPID))
	}
	return nil
}

// newClient finds the bridge and its token the way the server does: the
// address from --addr, else AGENTBRIDGE_ADDR, else the configured listen
// address; the token from AGENTBRIDGE_TOKEN or config, else the token file.
func newClient(fs *pflag.FlagSet, env []string) (*client.Client, error) {
	return client.Discover(fs, env)
}

// parseFlags parses args into fs, printing usage on -h. It returns done
// when the command has nothing more to do (help was shown).
func parseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer, usage string) (done bool, err error) {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: agentbridge %s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		fmt.Fprintf(stderr, "agentbridge %s: %v\n", fs.Name(), err)
		fs.Usage()
		return false, errExit1
	}
	return false, nil
}
