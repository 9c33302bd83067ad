package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/hooks/install"
	"github.com/agentbridge/agentbridge/internal/binpath"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/text"
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
~/.gemini) and Qwen Code's settings.json (in QWEN_HOME, default ~/.qwen).
Other settings, comments, layout and the user's own hooks are kept as they
are; a file is copied to <file>.agentbridge-backup before its first change;
installing twice changes nothing. Every file is read and checked first: a
file the agent would read differently (a name or table twice, a byte order
mark, comments the agent does not take) is refused with the reason, and
then nothing is written for any agent. Files are replaced atomically.
--dry-run prints the diff instead.

The hook command runs this binary by its installed path (or --bin PATH).
A binary inside a build directory (a checkout's bin/, a 'go run' build) is
refused, since a rebuild, 'make clean' or a moved checkout would break
every hook; --allow-build-path writes it anyway.

uninstall removes exactly what install added (commands carrying its mark,
` + install.Mark + `). status says per harness what is installed, whether it
runs this binary and whether the program it runs is still there.

Without --harness, install and uninstall act on every agent whose home
directory exists.

install --answer makes Claude Code's and Codex's PermissionRequest hook wait
for an answer given through the bridge (the dashboard's buttons, a desktop
notification's actions, 'agentbridge answer'): up to ` + answerWaitText("claude-code") + ` s for Claude Code,
whose own dialog stays usable meanwhile, and ` + answerWaitText("codex") + ` s for Codex, which shows
its own approval only once the hook has ended (--answer-wait sets another
bound). The bridge must have answering on too (hooks.answer: true in its
config, or serve --answer); otherwise the hook gives up at once. Installing
again without --answer makes the hook plain again. See docs/answering.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var o hooksOptions
	flags := func(c *cobra.Command) {
		c.Flags().StringSliceVar(&o.harnesses, "harness", nil, "only these harness `ids`: "+strings.Join(install.Harnesses(), ", "))
		c.Flags().String("config", "", "YAML config `file` (sources.<id>.home names an agent's home)")
		mustComplete(c, "harness", fixedCompletions(install.Harnesses()...))
	}
	edit := func(use, short string, install bool) *cobra.Command {
		return &cobra.Command{
			Use:   use,
			Short: short,
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return a.hooksEdit(cmd.Flags(), o, install)
			},
		}
	}
	in := edit("install", "add the hook to the agents' settings", true)
	un := edit("uninstall", "remove the hook from the agents' settings", false)
	st := &cobra.Command{
		Use:   "status",
		Short: "show what is installed, per harness",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.hooksStatus(cmd.Flags(), o)
		},
	}
	for _, c := range []*cobra.Command{in, un, st} {
		flags(c)
	}
	for _, c := range []*cobra.Command{in, un} {
		c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the diff of every file that would change, and change none")
	}
	in.Flags().StringVar(&o.bin, "bin", "", "the agentbridge `path` the hooks run (default: this binary)")
	in.Flags().BoolVar(&o.allowBuild, "allow-build-path", false, "write the path even when it is inside a build directory")
	in.Flags().BoolVar(&o.answer, "answer", false, "make the permission hook wait for an answer given through the bridge (Claude Code, Codex)")
	in.Flags().IntVar(&o.answerWait, "answer-wait", 0, "with --answer: how many `seconds` the hook waits (default: per agent, see docs/answering.md)")
	st.Flags().BoolVar(&o.asJSON, "json", false, "print the status as JSON")
	cmd.AddCommand(in, un, st)
	return cmd
}

// hooksOptions are the hooks subcommands' flags.
type hooksOptions struct {
	harnesses  []string
	asJSON     bool
	dryRun     bool
	bin        string
	allowBuild bool
	answer     bool
	answerWait int
}

// hookTargets are the agents' homes the hooks commands act on; explicit
// tells whether --harness named them.
func (a *app) hookTargets(fs *pflag.FlagSet, names []string) (targets []install.Target, explicit bool, err error) {
	cfg, err := config.Load(fs, a.env)
	if err != nil {
		return nil, false, err
	}
	if len(names) == 0 {
		names = install.Harnesses()
	} else {
		explicit = true
	}
	for _, n := range names {
		if !slices.Contains(install.Harnesses(), n) {
			return nil, false, usagef("--harness: no hooks for %q (harnesses with hooks: %s)", n, strings.Join(install.Harnesses(), ", "))
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

// hookProgram is the program the hook command runs: --bin or this binary,
// refused when it cannot run or sits in a build directory.
func hookProgram(o hooksOptions) (string, error) {
	return stableProgram(o.bin, o.allowBuild, "the hooks' program", "every hook", "hooks install")
}

// stableProgram is the agentbridge another program is told to run (what,
// for messages): bin when given, else this binary; refused when it cannot
// run, or sits in a build directory where a rebuild would break the users
// (who) unless allowBuild. cmd is the subcommand to run from an installed
// binary instead.
func stableProgram(bin string, allowBuild bool, what, who, cmd string) (string, error) {
	var prog string
	var err error
	if bin != "" {
		prog, err = binpath.Given(bin)
	} else {
		prog, err = binpath.Self()
	}
	if err != nil {
		return "", err
	}
	if err := binpath.Check(prog); err != nil {
		return "", fmt.Errorf("%s cannot be %s: %w", prog, what, err)
	}
	if why := binpath.BuildDir(prog); why != "" && !allowBuild {
		return "", fmt.Errorf("%s is inside %s: a rebuild, 'make clean' or a moved checkout would break %s. "+
			"Install agentbridge (make install, or go install) and run that binary's '%s', or name it with --bin PATH; "+
			"--allow-build-path writes this path anyway", prog, why, who, cmd)
	}
	return prog, nil
}

func (a *app) hooksEdit(fs *pflag.FlagSet, o hooksOptions, add bool) error {
	if o.answerWait != 0 && (!o.answer || o.answerWait < 0) {
		return usagef("--answer-wait needs --answer and a number of seconds above 0")
	}
	targets, explicit, err := a.hookTargets(fs, o.harnesses)
	if err != nil {
		return err
	}
	var prog string
	if add {
		if prog, err = hookProgram(o); err != nil {
			return err
		}
	}
	// every harness's edit is planned (every file read and checked)
	// before any file is written: all are written, or none
	var plan []install.Edit
	var planned []install.Target
	failed := false
	for _, t := range targets {
		if _, err := os.Stat(t.Home); err != nil && !explicit {
			fmt.Fprintf(a.stdout, "%-12s skipped: %s does not exist (name it with --harness to create it)\n", t.Harness, t.Home)
			continue
		}
		var edits []install.Edit
		if add {
			edits, err = install.PlanInstallAnswer(t, install.Command(prog, install.Source(t.Harness)), answerWait(o, t.Harness))
		} else {
			edits, err = install.PlanUninstall(t)
		}
		if err != nil {
			fmt.Fprintf(a.stderr, "%-12s %s\n", t.Harness, text.Printable(err.Error()))
			failed = true
			continue
		}
		plan = append(plan, edits...)
		planned = append(planned, t)
	}
	if failed {
		fmt.Fprintln(a.stderr, "nothing was written for any agent; fix what is named above and run it again")
		return errExit1
	}
	if o.dryRun {
		for _, t := range planned {
			n := 0
			for _, e := range plan {
				if e.Harness == t.Harness && e.Changes() {
					fmt.Fprint(a.stdout, e.Diff())
					n++
				}
			}
			if n == 0 {
				fmt.Fprintf(a.stdout, "%-12s %s\n", t.Harness, nothingToDo(add))
			}
		}
		return nil
	}
	changes, err := install.Apply(plan)
	if err != nil {
		fmt.Fprintln(a.stderr, text.Printable(err.Error()))
		return errExit1
	}
	for _, t := range planned {
		n := 0
		for _, e := range plan {
			if e.Harness != t.Harness {
				continue
			}
			for _, c := range changes {
				if c.File != e.File {
					continue
				}
				n++
				switch {
				case c.Removed:
					fmt.Fprintf(a.stdout, "%-12s removed %s (install had made it)\n", t.Harness, c.File)
				case c.Backup != "":
					fmt.Fprintf(a.stdout, "%-12s changed %s (backup: %s)\n", t.Harness, c.File, c.Backup)
				default:
					fmt.Fprintf(a.stdout, "%-12s changed %s\n", t.Harness, c.File)
				}
			}
		}
		if n == 0 {
			fmt.Fprintf(a.stdout, "%-12s %s\n", t.Harness, nothingToDo(add))
			continue
		}
		if add && t.Harness == "codex" {
			// Codex runs a new or changed hook only once it is trusted: its
			// next start shows "Hooks need review" (also /hooks).
			fmt.Fprintf(a.stdout, "%-12s Codex runs new hooks once you trust them: at its next start choose \"Trust all and continue\" (or review them in /hooks)\n", "")
		}
	}
	return nil
}

// answerWait is the wait install --answer writes for a harness, 0 for a
// plain install (also for a harness that cannot be answered).
func answerWait(o hooksOptions, harness string) int {
	wait, ok := install.Answerable(harness)
	if !o.answer || !ok {
		return 0
	}
	if o.answerWait > 0 {
		return o.answerWait
	}
	return wait
}

func nothingToDo(add bool) string {
	if add {
		return "installed already"
	}
	return "nothing to remove"
}

func (a *app) hooksStatus(fs *pflag.FlagSet, o hooksOptions) error {
	targets, _, err := a.hookTargets(fs, o.harnesses)
	if err != nil {
		return err
	}
	prog, err := binpath.Self()
	if err != nil {
		return err
	}
	var states []install.State
	for _, t := range targets {
		states = append(states, install.Status(t, prog))
	}
	if o.asJSON {
		b, err := json.MarshalIndent(map[string]any{"program": prog, "harnesses": states}, "", "  ")
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(append(text.EscapeJSON(b), '\n'))
		return err
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
				what += ", runs " + strings.Join(s.Programs, ", ") + " — not this binary (" + prog + ")"
			}
		}
		if s.Answer > 0 {
			what += fmt.Sprintf("; answering: the permission hook waits up to %d s", s.Answer)
		}
		if s.Feature != "" {
			what += "; hooks feature " + s.Feature
		}
		// what the files hold (a key named twice, a program path) may
		// carry terminal controls: shown, never acted on
		fmt.Fprintf(a.stdout, "%-12s %s  %s\n", s.Harness, text.Printable(what), text.Printable(s.File))
		for _, p := range s.Programs {
			if why, ok := s.Broken[p]; ok {
				fmt.Fprintf(a.stdout, "%-12s warning: the hooks run %s, but %s: they do nothing; run 'hooks install' from the installed agentbridge\n", "", text.Printable(p), why)
			}
		}
		if s.Foreign > 0 {
			fmt.Fprintf(a.stdout, "%-12s note: %d hook command(s) run 'agentbridge hook' but were not written by install (no %s): left alone\n", "", s.Foreign, install.Mark)
		}
	}
	return nil
}

// answerWaitText is the default wait of harness's answering hook, in
// seconds, as text.
func answerWaitText(harness string) string {
	w, _ := install.Answerable(harness)
	return strconv.Itoa(w)
}
