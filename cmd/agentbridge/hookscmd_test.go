package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/hooks/install"
)

func hooksRun(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = runArgs(context.Background(), "hooks", args, env, strings.NewReader(""), &out, &errb, watchBackoff)
	if err != nil && err != errExit1 {
		errb.WriteString(err.Error()) // what main prints
	}
	return out.String(), errb.String(), err
}

// hookHomes makes every agent's home under HOME and an installed
// agentbridge outside any checkout; it returns the env and the binary.
func hookHomes(t *testing.T) (env []string, home, bin string) {
	t.Helper()
	env = testEnv(t)
	home = strings.TrimPrefix(env[0], "HOME=")
	for _, d := range []string{".claude", ".codex", ".gemini", ".qwen"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	bin = filepath.Join(home, ".local", "bin", "agentbridge")
	writeFile(t, bin, "#!/bin/sh\n", 0o755)
	return env, home, bin
}

// Every agent's edit is planned before any file is written: one file that
// must be refused (Qwen's, with a name twice) leaves Claude Code's, Codex's
// and Gemini CLI's files as they were; with it fixed, every agent is
// installed, Gemini's commented settings included.
func TestHooksInstallIsAllOrNothing(t *testing.T) {
	env, home, bin := hookHomes(t)
	claude := filepath.Join(home, ".claude", "settings.json")
	writeFile(t, claude, "{\n  \"model\": \"opus\"\n}\n", 0o600)
	gemini := filepath.Join(home, ".gemini", "settings.json")
	commented, err := os.ReadFile("../../hooks/install/testdata/attacks/gemini-commented.json")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, gemini, string(commented), 0o600)
	qwen := filepath.Join(home, ".qwen", "settings.json")
	writeFile(t, qwen, `{"a": 1, "a": 2}`, 0o600)

	out, errOut, err := hooksRun(t, env, "install", "--bin", bin)
	if err == nil || !strings.Contains(errOut, "qwen-code") || !strings.Contains(errOut, "twice") || !strings.Contains(errOut, "nothing was written") {
		t.Fatalf("install with a refused file: %v\n%s\n%s", err, out, errOut)
	}
	if b, _ := os.ReadFile(claude); string(b) != "{\n  \"model\": \"opus\"\n}\n" {
		t.Fatalf("Claude Code's settings changed:\n%s", b)
	}
	for _, f := range []string{filepath.Join(home, ".codex", "hooks.json"), filepath.Join(home, ".codex", "config.toml"), claude + install.BackupSuffix} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	if b, _ := os.ReadFile(gemini); !bytes.Equal(b, commented) {
		t.Fatal("Gemini CLI's settings changed")
	}

	writeFile(t, qwen, `{"a": 1}`, 0o600)
	out, errOut, err = hooksRun(t, env, "install", "--bin", bin)
	if err != nil {
		t.Fatalf("install: %v\n%s\n%s", err, out, errOut)
	}
	for _, f := range []string{claude, gemini, qwen, filepath.Join(home, ".codex", "hooks.json")} {
		b, _ := os.ReadFile(f)
		if !bytes.Contains(b, []byte(install.Command(bin, "x")[:len(bin)])) || !bytes.Contains(b, []byte(install.Mark)) {
			t.Errorf("%s has no hook running %s:\n%s", f, bin, b)
		}
	}
	if b, _ := os.ReadFile(gemini); !bytes.Contains(b, []byte("// my Gemini settings")) {
		t.Error("Gemini's comments are gone")
	}
	out, _, _ = hooksRun(t, env, "status")
	if strings.Count(out, "installed (") != 4 || strings.Contains(out, "warning") {
		t.Fatalf("status:\n%s", out)
	}
}

// --dry-run prints the diff of every file and writes none.
func TestHooksInstallDryRun(t *testing.T) {
	env, home, bin := hookHomes(t)
	claude := filepath.Join(home, ".claude", "settings.json")
	writeFile(t, claude, "{\"model\":\"opus\"}\n", 0o600)
	out, errOut, err := hooksRun(t, env, "install", "--dry-run", "--bin", bin, "--harness", "claude-code,codex")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{"--- " + claude, "+++ " + claude, "-{\"model\":\"opus\"}", "+{\"model\":\"opus\",\"hooks\":{", "+++ " + filepath.Join(home, ".codex", "config.toml"), "+hooks = true"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(claude); string(b) != "{\"model\":\"opus\"}\n" {
		t.Fatal("--dry-run changed a file")
	}
	if _, err := os.Stat(filepath.Join(home, ".codex", "hooks.json")); err == nil {
		t.Fatal("--dry-run wrote a file")
	}
}

// The hooks point at a stable path: a binary in a checkout's bin/ (or this
// test binary, a go-build temporary) is refused unless allowed; status
// warns when the program the hooks run is gone.
func TestHooksInstallStablePath(t *testing.T) {
	env, home, bin := hookHomes(t)
	checkout := filepath.Join(home, "src", "agentbridge")
	writeFile(t, filepath.Join(checkout, "go.mod"), "module x\n", 0o644)
	built := filepath.Join(checkout, "bin", "agentbridge")
	writeFile(t, built, "#!/bin/sh\n", 0o755)
	claude := filepath.Join(home, ".claude", "settings.json")

	for _, args := range [][]string{{"--bin", built}, {}} { // {}: this test binary
		_, errOut, err := hooksRun(t, env, append([]string{"install", "--harness", "claude-code"}, args...)...)
		if err == nil || !strings.Contains(errOut, "--allow-build-path") {
			t.Fatalf("install %v: %v\n%s", args, err, errOut)
		}
		if _, err := os.Stat(claude); err == nil {
			t.Fatalf("install %v wrote the settings", args)
		}
	}
	if _, errOut, err := hooksRun(t, env, "install", "--harness", "claude-code", "--bin", built, "--allow-build-path"); err != nil {
		t.Fatalf("--allow-build-path: %v\n%s", err, errOut)
	}
	if b, _ := os.ReadFile(claude); !bytes.Contains(b, []byte(built+" hook")) {
		t.Fatalf("settings:\n%s", b)
	}
	if _, errOut, err := hooksRun(t, env, "install", "--harness", "claude-code", "--bin", filepath.Join(home, "nowhere")); err == nil || !strings.Contains(errOut, "gone") {
		t.Fatalf("a missing --bin: %v %s", err, errOut)
	}

	if _, errOut, err := hooksRun(t, env, "install", "--harness", "claude-code", "--bin", bin); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	out, _, _ := hooksRun(t, env, "status", "--harness", "claude-code")
	if strings.Contains(out, "warning") {
		t.Fatalf("status with the program there:\n%s", out)
	}
	os.Remove(bin)
	out, _, _ = hooksRun(t, env, "status", "--harness", "claude-code")
	if !strings.Contains(out, "warning: the hooks run "+bin+", but it is gone") {
		t.Fatalf("status with the program gone:\n%s", out)
	}
	out, _, _ = hooksRun(t, env, "status", "--harness", "claude-code", "--json")
	if !strings.Contains(out, `"broken"`) {
		t.Fatalf("status --json:\n%s", out)
	}
}
