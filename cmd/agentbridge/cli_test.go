package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// TestExitCodesAndStreams: help and version go to stdout with status 0;
// a usage error is one line and a hint on stderr with status 2; a command
// that fails exits 1.
func TestExitCodesAndStreams(t *testing.T) {
	dead := bridgetest.FreeAddr(t)
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // each must appear
		stderr     string   // must appear; "" means stderr must be empty
		stderrRows int      // lines on stderr, when stderr is wanted
	}{
		{"--help", []string{"--help"}, 0, []string{"Available Commands", "sessions", "watch", "open", "demo", "completion"}, "", 0},
		{"-h", []string{"-h"}, 0, []string{"Available Commands", "serve"}, "", 0},
		{"help", []string{"help"}, 0, []string{"Available Commands", "validate"}, "", 0},
		{"help sessions", []string{"help", "sessions"}, 0, []string{"--wide", "--status"}, "", 0},
		{"sessions --help", []string{"sessions", "--help"}, 0, []string{"agentbridge sessions [flags]", "--wide"}, "", 0},
		{"serve -h", []string{"serve", "-h"}, 0, []string{"--listen", "--window"}, "", 0},
		{"--version", []string{"--version"}, 0, []string{"agentbridge "}, "", 0},
		{"version", []string{"version"}, 0, []string{"agentbridge "}, "", 0},
		{"unknown subcommand", []string{"frob"}, 2, nil, `agentbridge: unknown command "frob"`, 2},
		{"unknown help topic", []string{"help", "frob"}, 2, nil, `no help topic "frob"`, 2},
		{"unknown flag", []string{"sessions", "--nope"}, 2, nil, "agentbridge sessions: unknown flag: --nope", 2},
		{"unknown serve flag", []string{"--nope"}, 2, nil, "unknown flag: --nope", 2},
		{"bad flag value", []string{"watch", "--limit", "many"}, 2, nil, "agentbridge watch: invalid argument", 2},
		{"negative limit", []string{"watch", "--limit", "-1"}, 2, nil, "--limit: -1 is negative", 2},
		{"bad colour", []string{"sessions", "--color", "sometimes", "--addr", dead}, 2, nil, "--color", 2},
		{"extra argument", []string{"sessions", "extra"}, 2, nil, `unexpected argument "extra"`, 2},
		{"validate without arguments", []string{"validate"}, 2, nil, "want two arguments", 2},
		{"unknown shell", []string{"completion", "tcsh"}, 2, nil, `unknown command "tcsh"`, 2},
		{"hint", []string{"open", "--bad"}, 2, nil, "Run 'agentbridge open --help' for usage.", 2},
		{"failure", []string{"sessions", "--addr", dead}, 1, nil, "no agentbridge at " + dead, 1},
		{"validate finds issues", []string{"validate", "snapshot", "/nonexistent/file.json"}, 1, nil, "read input", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			a := &app{env: testEnv(t), stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, backoff: fastBackoff}
			code := a.exitCode(a.execute(context.Background(), tt.args))
			if code != tt.code {
				t.Errorf("exit status %d, want %d (stdout %q, stderr %q)", code, tt.code, stdout.String(), stderr.String())
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			switch {
			case tt.stderr == "" && stderr.Len() > 0:
				t.Errorf("stderr = %q, want nothing", stderr.String())
			case tt.stderr != "" && !strings.Contains(stderr.String(), tt.stderr):
				t.Errorf("stderr = %q, want %q", stderr.String(), tt.stderr)
			case tt.stderr != "" && strings.Count(stderr.String(), "\n") != tt.stderrRows:
				t.Errorf("stderr has %d lines, want %d:\n%s", strings.Count(stderr.String(), "\n"), tt.stderrRows, stderr.String())
			}
			if tt.code == 2 && stdout.Len() > 0 {
				t.Errorf("a usage error printed to stdout: %q", stdout.String())
			}
		})
	}
}

// TestCompletion: the scripts are printed for each shell, bash loads its
// own, and the completions list the subcommands and the flags' values.
func TestCompletion(t *testing.T) {
	gen := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		a := &app{env: testEnv(t), stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, backoff: fastBackoff}
		if code := a.exitCode(a.execute(context.Background(), args)); code != 0 {
			t.Fatalf("agentbridge %v: exit %d: %s", args, code, stderr.String())
		}
		return stdout.String()
	}
	for shell, want := range map[string]string{
		"bash": "__start_agentbridge", "zsh": "#compdef agentbridge", "fish": "complete -c agentbridge",
	} {
		if out := gen("completion", shell); !strings.Contains(out, want) {
			t.Errorf("completion %s lacks %q", shell, want)
		}
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		script := filepath.Join(t.TempDir(), "agentbridge.bash")
		if err := os.WriteFile(script, []byte(gen("completion", "bash")), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bash, "-c", "source "+script+" && complete -p agentbridge").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "agentbridge") {
			t.Errorf("bash could not load the completion: %v %s", err, out)
		}
	}
	subs := gen("__complete", "")
	for _, c := range []string{"serve", "sessions", "watch", "open", "demo", "validate", "version"} {
		if !strings.Contains(subs, c+"\t") {
			t.Errorf("subcommand completion lacks %s:\n%s", c, subs)
		}
	}
	if strings.Contains(subs, "man\t") {
		t.Errorf("the hidden man subcommand is offered:\n%s", subs)
	}
	if got := gen("__complete", "sessions", "--status", ""); !strings.Contains(got, "waiting\n") || !strings.Contains(got, "blocked\n") {
		t.Errorf("--status completion = %q, want waiting", got)
	}
	if got := gen("__complete", "validate", ""); !strings.Contains(got, "snapshot\n") || !strings.Contains(got, "event\n") {
		t.Errorf("validate KIND completion = %q", got)
	}
}

// TestManPages: `agentbridge man DIR` (make man) writes a page for the
// command and one for each subcommand.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	a := &app{env: testEnv(t), stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, backoff: fastBackoff}
	if err := a.execute(context.Background(), []string{"man", dir}); err != nil {
		t.Fatalf("man: %v %s", err, stderr.String())
	}
	for _, page := range []string{"agentbridge.1", "agentbridge-serve.1", "agentbridge-sessions.1", "agentbridge-open.1", "agentbridge-demo.1", "agentbridge-history.1", "agentbridge-history-export.1", "agentbridge-history-prune.1", "agentbridge-usage.1"} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Errorf("no man page %s: %v", page, err)
			continue
		}
		if !strings.Contains(string(b), ".TH ") || !strings.Contains(string(b), ".SH NAME") {
			t.Errorf("%s is not a man page:\n%.300s", page, b)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "agentbridge-sessions.1"))
	if !strings.Contains(string(b), "wide") {
		t.Error("the sessions page does not describe --wide")
	}
}

// TestDemoHelpShowsWhatItUses: demo's help lists its own flags with the
// defaults it really uses, and none of serve's that it ignores.
func TestDemoHelpShowsWhatItUses(t *testing.T) {
	var stdout, stderr strings.Builder
	a := &app{env: testEnv(t), stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, backoff: fastBackoff}
	if err := a.execute(context.Background(), []string{"demo", "--help"}); err != nil {
		t.Fatal(err)
	}
	help := stdout.String()
	for _, want := range []string{"--speed", "--loop", "--listen", "when it is taken: a free loopback port", "--linger duration", "(default 30s)"} {
		if !strings.Contains(help, want) {
			t.Errorf("demo --help lacks %q:\n%s", want, help)
		}
	}
	for _, unused := range []string{"--claude-config-dir", "--codex-home", "--example-agent-home", "--window", "--auth", "--token-file", "--allow-remote", "--config"} {
		if strings.Contains(help, unused) {
			t.Errorf("demo --help shows %s, which the demo does not use:\n%s", unused, help)
		}
	}
}
