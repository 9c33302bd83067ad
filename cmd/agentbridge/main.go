// Command agentbridge serves every AI coding agent session on this machine as
// a REST snapshot and an SSE stream, and offers the client subcommands that
// read them. Run it with no subcommand to serve on the default address.
//
// Exit status: 0 on success (help and version included), 1 when a command
// fails (or validate finds issues), 2 on a usage error (an unknown
// subcommand or flag, a bad flag value, a wrong number of arguments), which
// is printed on one line followed by a one-line hint.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	_ "time/tzdata" // zones a client names (tz, --tz) on a system without a zone database

	"github.com/spf13/cobra"
)

// errExit1 asks for exit status 1 with nothing more printed.
var errExit1 = errors.New("exit status 1")

// usageError is a command line that cannot be run as written; it exits
// with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef makes a usageError.
func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// app is what one run of the command line works with: the environment and
// the standard streams are passed in, never read from the process, so tests
// run every subcommand in-process.
type app struct {
	env            []string
	stdin          io.Reader
	stdout, stderr io.Writer
	backoff        backoff                // watch's reconnect delays
	browse         func(url string) error // opens a URL in a browser (open); nil: the system's
	isTerminal     func(w io.Writer) bool // whether w is a terminal; nil: ask the kernel
	running        bool                   // the subcommand's flags and arguments were accepted
	ran            *cobra.Command         // the subcommand that was run, for error messages
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{env: os.Environ(), stdin: os.Stdin, stdout: stdout, stderr: stderr, backoff: watchBackoff}
	return a.exitCode(a.execute(ctx, args))
}

// execute runs one command line. With no subcommand it serves; flags
// without a subcommand are serve's ("agentbridge --listen :0"), except the
// root's own -h, --help and --version.
func (a *app) execute(ctx context.Context, args []string) error {
	if len(args) == 0 {
		args = []string{"serve"}
	} else if strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-h", "--help", "--version", "-v":
		default:
			args = append([]string{"serve"}, args...)
		}
	}
	root := newRoot(a)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	a.ran = cmd
	if err != nil && !a.running && !errors.As(err, new(usageError)) && !errors.Is(err, errExit1) {
		err = usageError{err}
	}
	return err
}

// exitCode prints err as the user should see it and returns the status.
func (a *app) exitCode(err error) int {
	name := "agentbridge"
	if a.ran != nil {
		name = a.ran.CommandPath()
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errExit1):
		return 1
	case errors.As(err, &ue):
		fmt.Fprintf(a.stderr, "%s: %s\n", name, firstLine(ue.Error()))
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", name)
		return 2
	default:
		fmt.Fprintf(a.stderr, "%s: %v\n", name, err)
		return 1
	}
}

// firstLine is s up to its first newline (cobra appends suggestions).
func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// newRoot builds the command tree for one run.
func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentbridge",
		Short: "watch every AI coding agent session on this machine",
		Long: `agentbridge watches the session journals and processes of the AI coding
agent CLIs on this machine (Claude Code, Codex and more), turns them into one
small lifecycle vocabulary, and serves it as a REST snapshot and an event
stream to a browser dashboard, the Terminay extension, curl and its own
client subcommands. With no subcommand it serves on 127.0.0.1:7391.`,
		Version:           versionLine(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			a.running = true
			return nil
		},
	}
	root.SetVersionTemplate("agentbridge {{.Version}}\n")
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetIn(a.stdin)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newServeCmd(a),
		newDemoCmd(a),
		newDemoAgentCmd(a),
		newOpenCmd(a),
		newSessionsCmd(a),
		newHistoryCmd(a),
		newUsageCmd(a),
		newAnswerCmd(a),
		newWatchCmd(a),
		newStreamCmd(a),
		newNotifyCmd(a),
		newValidateCmd(a),
		newHookCmd(a),
		newHooksCmd(a),
		newVersionCmd(a),
		newServiceCmd(a),
		newManCmd(a),
	)
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [subcommand]",
		Short: "help about any subcommand",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, rest, err := cmd.Root().Find(args)
			if err != nil || c == nil || len(rest) > 0 {
				return usagef("no help topic %q", strings.Join(args, " "))
			}
			return c.Help()
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			var names []string
			for _, c := range cmd.Root().Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	})
	// Made runnable, "completion" refuses an unknown shell as a usage error
	// instead of printing its help with status 0.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
	return root
}

// env returns the last value of key in the app's environment.
func (a *app) getenv(key string) string { return envGet(a.env, key) }
