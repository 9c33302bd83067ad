package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentbridge/agentbridge/internal/binpath"
	"github.com/agentbridge/agentbridge/service"
)

func newServiceCmd(a *app) *cobra.Command {
	var bin string
	cmd := &cobra.Command{
		Use:   "service",
		Short: "run the bridge at login: install, uninstall or show its user service",
		Long: `Run the bridge at login as this user's service: a systemd user unit on
Linux ($XDG_CONFIG_HOME/systemd/user/agentbridge.service), a launchd agent
on macOS (~/Library/LaunchAgents/` + service.Label + `.plist). It starts
"agentbridge serve" from this binary (or --bin): install agentbridge first
(make install, a release archive or the .deb); a binary inside a build
directory is refused unless --allow-build-path.

install writes the definition atomically and enables and starts the
service; run twice it changes nothing. Where no user systemd runs (a
container, CI) it writes the unit and says how to enable it. uninstall
stops the service and removes the definition. --dry-run prints what
either would do.

The definition ends in a checksum line: a definition you edited (or wrote
yourself) is never replaced or removed unless --force, which keeps a copy
beside it (.bak). On Linux, keep your changes in a drop-in instead
(systemctl --user edit agentbridge), which install never touches.`,
		Args: noArgs,
	}
	manager := func(prog string, force bool) service.Manager {
		return service.Manager{GOOS: goos, Home: envGet(a.env, "HOME"), ConfigHome: envGet(a.env, "XDG_CONFIG_HOME"),
			RuntimeDir: envGet(a.env, "XDG_RUNTIME_DIR"), UID: os.Getuid(), Binary: prog, Force: force}
	}
	// given is --bin or this binary, as a path, unchecked (uninstall,
	// status and unit need not run it).
	given := func() (string, error) {
		if bin != "" {
			return binpath.Given(bin)
		}
		return binpath.Self()
	}
	change := func(use, short string, install bool) *cobra.Command {
		var dry, force, allowBuild bool
		c := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				prog, err := given()
				if install {
					prog, err = stableProgram(bin, allowBuild, "the service's program", "the service", "service install")
				}
				if err != nil {
					return err
				}
				m := manager(prog, force)
				plan := m.Uninstall
				if install {
					plan = m.Install
				}
				p, err := plan()
				if err != nil {
					return err
				}
				if len(p) == 0 {
					_, err := fmt.Fprintf(a.stdout, "agentbridge service %s: nothing to do (%s)\n", use, m.Path())
					return err
				}
				if dry {
					_, err := fmt.Fprintf(a.stdout, "agentbridge service %s would:\n%s", use, p)
					return err
				}
				if err := m.Apply(cmd.Context(), p); err != nil {
					return err
				}
				_, err = fmt.Fprintf(a.stdout, "agentbridge service %s:\n%s", use, p.Brief())
				return err
			},
		}
		c.Flags().BoolVar(&dry, "dry-run", false, "print what would be done, change nothing")
		c.Flags().BoolVar(&force, "force", false, "replace or remove a definition that was edited, keeping a copy (.bak)")
		if install {
			c.Flags().BoolVar(&allowBuild, "allow-build-path", false, "start the binary even when it is inside a build directory")
		}
		return c
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "show the service's definition, the binary it starts and its state",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prog, err := given()
			if err != nil {
				return err
			}
			m := manager(prog, false)
			st, err := m.Status(cmd.Context())
			if err != nil {
				return err
			}
			return printServiceStatus(a, m, st)
		},
	}
	unit := &cobra.Command{
		Use:    "unit",
		Short:  "print the systemd user unit for the binary, for packages (the .deb)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(*cobra.Command, []string) error {
			prog, err := given()
			if err != nil {
				return err
			}
			u, err := service.Unit(prog)
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(u)
			return err
		},
	}
	cmd.PersistentFlags().StringVar(&bin, "bin", "", "the agentbridge `path` the service starts (default: this binary)")
	cmd.AddCommand(
		change("install", "write, enable and start the user service (--dry-run: print what it would do)", true),
		change("uninstall", "stop and disable the user service and remove it (--dry-run: print what it would do)", false),
		status, unit)
	return cmd
}

func printServiceStatus(a *app, m service.Manager, st service.Status) error {
	w := a.stdout
	if !st.Installed {
		_, err := fmt.Fprintf(w, "not installed (%s); agentbridge service install installs it\n", st.Path)
		return err
	}
	fmt.Fprintf(w, "installed: %s\n", st.Path)
	if st.Edited {
		fmt.Fprintln(w, "edited:    not as agentbridge wrote it; install and uninstall leave it alone (--force replaces it, keeping a copy)")
	}
	switch {
	case st.Binary == "":
		fmt.Fprintln(w, "starts:    (not known: not written by agentbridge service install)")
	case st.Missing:
		fmt.Fprintf(w, "starts:    %s (MISSING: reinstall, then agentbridge service install)\n", st.Binary)
	default:
		fmt.Fprintf(w, "starts:    %s\n", st.Binary)
	}
	if !st.Current && !st.Edited {
		fmt.Fprintf(w, "outdated:  differs from what %s would write; agentbridge service install updates it\n", m.Binary)
	}
	if st.Manager != "" {
		fmt.Fprintf(w, "state:     %s\n", st.Manager)
	} else if !m.Running() {
		fmt.Fprintln(w, "state:     no user systemd runs here")
	}
	return nil
}
