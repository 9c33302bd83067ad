package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/sources"
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
	hosts                        []string
	project                      string
	ancestorPID                  int
}

func (f *filterFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.sources, "source", nil, "only these source `ids` (comma list, repeatable)")
	fs.StringSliceVar(&f.harnesses, "harness", nil, "only these harness `ids` (comma list, repeatable)")
	fs.StringSliceVar(&f.statuses, "status", nil, "only these `statuses`: running, waiting, blocked, idle (a finished turn and an ended session are idle)")
	fs.StringSliceVar(&f.hosts, "host", nil, "only these `hosts`: remote ids, or local for the bridge's own sessions")
	fs.StringVar(&f.project, "project", "", "only sessions in this project `dir` (at or below it, or in a linked Git worktree of it)")
	fs.IntVar(&f.ancestorPID, "ancestor-pid", 0, "only sessions whose process descends from `pid`")
}

// complete registers the filters' value completions on cmd.
func (f *filterFlags) complete(cmd *cobra.Command) {
	mustComplete(cmd, "status", fixedCompletions("running", "waiting", "blocked", "idle"))
	mustComplete(cmd, "source", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var ids []string
		for _, r := range sources.Registered() {
			ids = append(ids, r.Info.ID)
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	})
	mustComplete(cmd, "project", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
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
	if len(f.hosts) > 0 {
		q.Set("host", strings.Join(f.hosts, ","))
	}
	if f.project != "" {
		p, err := filepath.Abs(f.project)
		if err != nil {
			return fmt.Errorf("--project: %w", err)
		}
		q.Set("project", p)
	}
	if f.ancestorPID < 0 {
		return usagef("--ancestor-pid: %d is not a process id", f.ancestorPID)
	}
	if f.ancestorPID > 0 {
		q.Set("ancestorPid", strconv.Itoa(f.ancestorPID))
	}
	return nil
}

// cliClient is what the client subcommands talk to the bridge with:
// package client's Client, and the state directory it was found from.
type cliClient struct {
	*client.Client
	// stateDir is the bridge's state directory ("" when it cannot be named).
	stateDir string
}

// newClient finds the bridge and its token the way the server does
// (config.Load, then Config.Client: --addr, else AGENTBRIDGE_ADDR, else the
// configured address; AGENTBRIDGE_TOKEN or config, else the token file). A
// token file that does not exist yet is not an error here: the bridge may
// run with auth none, and a 401 answer says what to do.
//
// When no layer names an address (no --addr, AGENTBRIDGE_ADDR, addr or
// listen setting), a running demo is found through the address it records
// in the state directory (see demoAddrFile).
func newClient(fs *pflag.FlagSet, env []string) (*cliClient, error) {
	cfg, err := config.Load(fs, env)
	if err != nil {
		return nil, err
	}
	c, err := cfg.Client()
	if err != nil {
		return nil, err
	}
	if cfg.Addr == "" && cfg.Listen == config.DefaultListen {
		if demo, ok := runningDemo(cfg.StateDir); ok {
			if c.Addr, err = client.DialAddr(demo); err != nil {
				return nil, err
			}
		}
	}
	return &cliClient{Client: c, stateDir: cfg.StateDir}, nil
}
