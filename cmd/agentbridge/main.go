// Command agentbridge serves every AI coding agent session on this machine as
// a REST snapshot and an SSE stream, and offers the client subcommands that
// read them. Run it with no arguments to serve on the default address.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand. It returns errExit1 to exit with status 1
// without printing an error (e.g. validate found issues).
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// errExit1 asks for exit status 1 with nothing more printed.
var errExit1 = errors.New("exit status 1")

var commands = map[string]command{}

// register adds a subcommand; each subcommand's file calls it from init.
func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	if _, dup := commands[name]; dup {
		panic("agentbridge: subcommand registered twice: " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand ("serve" when none is named) and returns the
// exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name == "help" || (len(args) == 0 && name == "-h") {
		usage(stdout)
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "agentbridge: unknown subcommand %q\n", name)
		usage(stderr)
		return 2
	}
	if err := cmd.run(ctx, args, stdout, stderr); err != nil {
		if errors.Is(err, errExit1) {
			return 1
		}
		fmt.Fprintf(stderr, "agentbridge %s: %v\n", name, err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: agentbridge [subcommand] [flags]")
	fmt.Fprintln(w, "\nsubcommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'agentbridge SUBCOMMAND -h' for a subcommand's flags.")
}
