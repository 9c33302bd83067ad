package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbridge/agentbridge/service"
)

func newServiceCmd(a *app) *cobra.Command {
	var binary string
	cmd := &cobra.Command{
		Use:   "service",
		Short: "run the bridge at login: install, uninstall or show its user service",
		Long: `Run the bridge at login as this user's service: a systemd user unit on
Linux ($XDG_CONFIG_HOME/systemd/user/agentbridge.service), a launchd agent
on macOS (~/Library/LaunchAgents/` + service.Label + `.plist). It starts
"agentbridge serve" from this binary (or --binary): install it first
(make install, a release archive or the .deb) so that the service does
not point into a build directory.

install writes the definition and enables and starts the service; run
twice it changes nothing. Where no user systemd runs (a container, CI) it
writes the unit and says how to enable it. uninstall stops the service
and removes the definition. --dry-run prints what either would do.`,
		Args: noArgs,
	}
	manager := func() (service.Manager, error) {
		bin := binary
		if bin == "" {
			exe, err := os.Executable()
			if err != nil {
				return service.Manager{}, fmt.Errorf("service: this binary's path: %w", err)
			}
			if bin, err = filepath.EvalSymlinks(exe); err != nil {
				return service.Manager{}, fmt.Errorf("service: this binary's path: %w", err)
			}
		}
		bin, err := filepath.Abs(bin)
		if err != nil {
			return service.Manager{}, err
		}
		return service.Manager{GOOS: goos, Home: envGet(a.env, "HOME"), ConfigHome: envGet(a.env, "XDG_CONFIG_HOME"),
			RuntimeDir: envGet(a.env, "XDG_RUNTIME_DIR"), UID: os.Getuid(), Binary: bin}, nil
	}
	change := func(use, short string, plan func(service.Manager) (service.Plan, error)) *cobra.Command {
		var dry bool
		c := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				m, err := manager()
				if err != nil {
					return err
				}
				p, err := plan(m)
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
		return c
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "show the service's definition, the binary it starts and its state",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := manager()
			if err != nil {
				return err
			}
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
			m, err := manager()
			if err != nil {
				return err
			}
			u, err := service.Unit(m.Binary)
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(u)
			return err
		},
	}
	cmd.PersistentFlags().StringVar(&binary, "binary", "", "the agentbridge `path` the service starts (default: this binary)")
	cmd.AddCommand(
		change("install", "write, enable and start the user service (--dry-run: print what it would do)", service.Manager.Install),
		change("uninstall", "stop and disable the user service and remove it (--dry-run: print what it would do)", service.Manager.Uninstall),
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
	switch {
	case st.Binary == "":
		fmt.Fprintln(w, "starts:    (not written by agentbridge service install)")
	case st.Missing:
		fmt.Fprintf(w, "starts:    %s (MISSING: reinstall, then agentbridge service install)\n", st.Binary)
	default:
		fmt.Fprintf(w, "starts:    %s\n", st.Binary)
	}
	if !st.Current {
		fmt.Fprintf(w, "outdated:  differs from what this binary (%s) would write; agentbridge service install updates it\n", m.Binary)
	}
	if st.Manager != "" {
		fmt.Fprintf(w, "state:     %s\n", st.Manager)
	} else if !m.Running() {
		fmt.Fprintln(w, "state:     no user systemd runs here")
	}
	return nil
}
