package main

import (
	"context"
	"io"
	"strings"
)

// The subcommands as the tests call them: one command line each, with the
// environment and the streams injected.

func runArgs(ctx context.Context, name string, args, env []string, stdin io.Reader, stdout, stderr io.Writer, bo backoff) error {
	a := &app{env: env, stdin: stdin, stdout: stdout, stderr: stderr, backoff: bo}
	return a.execute(ctx, append([]string{name}, args...))
}

func serveMain(ctx context.Context, args, env []string, stdout, stderr io.Writer) error {
	return runArgs(ctx, "serve", args, env, strings.NewReader(""), stdout, stderr, watchBackoff)
}

func demoMain(ctx context.Context, args, env []string, stdout, stderr io.Writer) error {
	return runArgs(ctx, "demo", args, env, strings.NewReader(""), stdout, stderr, watchBackoff)
}

func sessionsMain(ctx context.Context, args, env []string, stdout, stderr io.Writer) error {
	return runArgs(ctx, "sessions", args, env, strings.NewReader(""), stdout, stderr, watchBackoff)
}

func watchMain(ctx context.Context, args, env []string, stdout, stderr io.Writer, bo backoff) error {
	return runArgs(ctx, "watch", args, env, strings.NewReader(""), stdout, stderr, bo)
}

func validateMain(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runArgs(context.Background(), "validate", args, nil, stdin, stdout, stderr, watchBackoff)
}
