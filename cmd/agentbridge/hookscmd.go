package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/hooks/install"
	"github.com/agentbridge/agentbridge/sources"
)

func newHooksCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks install|uninstall|status",
		Short: "add the bridge's hook to Claude Code, Codex, Gemini CLI and Qwen Code, remove it, or show it",
		Long: `Hooks make "waiting for you" exact: the agent runs 'agentbridge hook SOURCE'
when it shows a permission prompt, runs a tool, stops a turn, and the bridge
shows the session as waiting with the tool it asks about
("Approve Bash: git push") until it is answered.

install merges the hook into the agent's own settings: Claude Code's
settings.json (in CLAUDE_CONFIG_DIR, default ~/.claude), Codex's hooks.json
plus the [features] hooks flag of its config.toml (in CODEX_HOME, default
~/.codex), Gemini CLI's settings.json (in $GEMINI_CLI_HOME/.gemini, default
~/.gemini) and Qwen Code's settings.json (in QWEN_HOME, default ~/.qwen). Other settings and hooks are kept as they are; a file is copied
to <file>.agentbridge-backup before its first change; installing twice
changes nothing. uninstall removes exactly what install added. status says
per harness what is installed and whether it runs this binary.

Without --harness, install and uninstall act on every agent whose home
directory exists.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var harnesses []string
	var asJSON bool
	flags := func(c *cobra.Command) {
		c.Flags().StringSliceVar(&harnesses, "harness", nil, "only these harness `ids`: "+strings.Join(install.Harnesses, ", "))
		c.Flags().String("config", "", "YAML config `file` (sources.<id>.home names an agent's home)")
		mustComplete(c, "harness", fixedCompletions(install.Harnesses...))
	}
	in := &cobra.Command{
		Use:   "install",
		Short: "add the hook to the agents' settings",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.hooksEdit(cmd.Flags(), harnesses, true)
		},
	}
	un := &cobra.Command{
		Use:   "uninstall",
		Short: "remove the hook from the agents' settings",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.hooksEdit(cmd.Flags(), harnesses, false)
		},
	}
	st := &cobra.Command{
		Use:   "status",
		Short: "show what is installed, per harness",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.hooksStatus(cmd.Flags(), harnesses, asJSON)
		},
	}
	for _, c := range []*cobra.Command{in, un, st} {
		flags(c)
	}
	st.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.AddCommand(in, un, st)
	return cmd
}

// hookTargets are the agents' homes the hooks commands act on; explicit
// tells whether --harness named them.
func (a *app) hookTargets(fs *pflag.FlagSet, names []string) (targets []install.Target, explicit bool, err error) {
	cfg, err := config.Load(fs, a.env)
	if err != nil {
		return nil, false, err
	}
	if len(names) == 0 {
		names = install.Harnesses
	} else {
		explicit = true
	}
	for _, n := range names {
		if !slices.Contains(install.Harnesses, n) {
			return nil, false, usagef("--harness: no hooks for %q (harnesses with hooks: %s)", n, strings.Join(install.Harnesses, ", "))
		}
		src := install.Source(n)
		r, ok := sources.Lookup(src)
		if !ok {
			return nil, false, fmt.Errorf("source %s is not built in", src)
		}
		home := r.ResolveHome(cfg.SourceHome(src), cfg.Getenv)
		if home == "" {
			return nil, false, fmt.Errorf("%s: no home directory (set the agent's home variable or HOME)", n)
		}
		targets = append(targets, install.Target{Harness: n, Home: home})
	}
	return targets, explicit, nil
}

// self is the program the hook command runs: this binary.
func self() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this binary: %w", err)
	}
	return filepath.Clean(p), nil
}

func (a *app) hooksEdit(fs *pflag.FlagSet, names []string, add bool) error {
	targets, explicit, err := a.hookTargets(fs, names)
	if err != nil {
		return err
	}
	prog, err := self()
	if err != nil {
		return err
	}
	failed := false
	for _, t := range targets {
		if _, err := os.Stat(t.Home); err != nil && !explicit {
			fmt.Fprintf(a.stdout, "%-12s skipped: %s does not exist (name it with --harness to create it)\n", t.Harness, t.Home)
			continue
		}
		var changes []install.Change
		if add {
			changes, err = install.Install(t, install.Command(prog, install.Source(t.Harness)))
		} else {
			changes, err = install.Uninstall(t)
		}
		if err != nil {
			fmt.Fprintf(a.stderr, "%-12s %v\n", t.Harness, err)
			failed = true
			continue
		}
		if len(changes) == 0 {
			what := "installed already"
			if !add {
				what = "nothing to remove"
			}
			fmt.Fprintf(a.stdout, "%-12s %s\n", t.Harness, what)
			continue
		}
		for _, c := range changes {
			switch {
			case c.Removed:
				fmt.Fprintf(a.stdout, "%-12s removed %s (install had made it)\n", t.Harness, c.File)
			case c.Backup != "":
				fmt.Fprintf(a.stdout, "%-12s changed %s (backup: %s)\n", t.Harness, c.File, c.Backup)
			default:
				fmt.Fprintf(a.stdout, "%-12s changed %s\n", t.Harness, c.File)
			}
		}
		if add && t.Harness == "codex" {
			// Codex runs a new or changed hook only once it is trusted: its
			// next start shows "Hooks need review" (also /hooks).
			fmt.Fprintf(a.stdout, "%-12s Codex runs new hooks once you trust them: at its next start choose \"Trust all and continue\" (or review them in /hooks)\n", "")
		}
	}
	if failed {
		return errExit1
	}
	return nil
}

func (a *app) hooksStatus(fs *pflag.FlagSet, names []string, asJSON bool) error {
	targets, _, err := a.hookTargets(fs, names)
	if err != nil {
		return err
	}
	prog, err := self()
	if err != nil {
		return err
	}
	var states []install.State
	for _, t := range targets {
		states = append(states, install.Status(t, prog))
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"program": prog, "harnesses": states})
	}
	for _, s := range states {
		var what string
		switch {
		case s.Problem != "":
			what = "unreadable: " + s.Problem
		case len(s.Events) == 0:
			what = "not installed"
		case s.Installed():
			what = fmt.Sprintf("installed (%d events)", len(s.Events))
		default:
			what = fmt.Sprintf("partly installed: %d events, missing %s", len(s.Events), strings.Join(s.Missing, ", "))
		}
		if len(s.Events) > 0 {
			if s.Current {
				what += ", runs this binary"
			} else {
				what += ", runs " + strings.Join(s.Programs, ", ") + " — not this binary (" + prog + "); run install again"
			}
		}
		if s.Feature != "" {
			what += "; hooks feature " + s.Feature
		}
		fmt.Fprintf(a.stdout, "%-12s %s  %s\n", s.Harness, what, s.File)
	}
	return nil
}
