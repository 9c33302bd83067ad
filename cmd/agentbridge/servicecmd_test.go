package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// service install --dry-run prints the unit it would write, pointing at the
// binary given, and writes nothing; install then writes it, a second
// install changes nothing, status names the binary (and says when it is
// gone) and uninstall removes it.
func TestServiceCommand(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(home, "p", "bin", "agentbridge")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	unit := filepath.Join(home, ".config", "systemd", "user", "agentbridge.service")
	goosWas := goos
	goos = "linux"
	t.Cleanup(func() { goos = goosWas })

	out := serviceRun(t, env, 0, "service", "install", "--dry-run", "--bin", bin)
	if !strings.Contains(out, "write "+unit+":") || !strings.Contains(out, `ExecStart="`+bin+`" serve`) {
		t.Fatalf("dry run:\n%s", out)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Fatalf("dry run wrote the unit: %v", err)
	}
	serviceRun(t, env, 0, "service", "install", "--bin", bin)
	b, err := os.ReadFile(unit)
	if err != nil || !strings.Contains(string(b), `ExecStart="`+bin+`" serve`) {
		t.Fatalf("unit after install: %v\n%s", err, b)
	}
	if out := serviceRun(t, env, 0, "service", "install", "--bin", bin); strings.Contains(out, "write ") {
		t.Fatalf("second install rewrote the unit:\n%s", out)
	}
	if out := serviceRun(t, env, 0, "service", "status", "--bin", bin); !strings.Contains(out, "starts:    "+bin+"\n") || strings.Contains(out, "outdated") {
		t.Fatalf("status:\n%s", out)
	}
	os.Remove(bin)
	if out := serviceRun(t, env, 0, "service", "status", "--bin", bin); !strings.Contains(out, "starts:    "+bin+" (MISSING") {
		t.Fatalf("status with the binary gone:\n%s", out)
	}
	// The .deb's unit, whatever the build host.
	goos = "darwin"
	if out := serviceRun(t, env, 0, "service", "unit", "--bin", "/usr/bin/agentbridge"); !strings.Contains(out, "ExecStart=\"/usr/bin/agentbridge\" serve\n") {
		t.Fatalf("service unit:\n%s", out)
	}
	goos = "linux"
	serviceRun(t, env, 0, "service", "uninstall", "--bin", bin)
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Fatalf("unit after uninstall: %v", err)
	}
}

// install refuses a binary that is not there or sits in a build directory
// (a checkout's bin/), as hooks install does, and writes nothing; an
// edited unit is refused with the way out.
func TestServiceInstallRefuses(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	unit := filepath.Join(home, ".config", "systemd", "user", "agentbridge.service")
	goosWas := goos
	goos = "linux"
	t.Cleanup(func() { goos = goosWas })

	checkout := filepath.Join(home, "src", "agentbridge")
	built := filepath.Join(checkout, "bin", "agentbridge")
	os.MkdirAll(filepath.Dir(built), 0o755)
	os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module x\n"), 0o644)
	os.WriteFile(built, []byte("#!/bin/sh\n"), 0o755)

	if errOut := serviceRun(t, env, 1, "service", "install", "--bin", filepath.Join(home, "nowhere")); !strings.Contains(errOut, "it is gone") {
		t.Errorf("install of a missing binary: %s", errOut)
	}
	if errOut := serviceRun(t, env, 1, "service", "install", "--bin", built); !strings.Contains(errOut, "source checkout") || !strings.Contains(errOut, "--allow-build-path") {
		t.Errorf("install of a checkout's binary: %s", errOut)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Fatalf("a refused install wrote the unit: %v", err)
	}
	serviceRun(t, env, 0, "service", "install", "--bin", built, "--allow-build-path")
	b, _ := os.ReadFile(unit)
	os.WriteFile(unit, append(b, "Environment=MINE=1\n"...), 0o644)
	if errOut := serviceRun(t, env, 1, "service", "install", "--bin", built, "--allow-build-path"); !strings.Contains(errOut, "--force") {
		t.Errorf("install over an edited unit: %s", errOut)
	}
	if out := serviceRun(t, env, 0, "service", "status", "--bin", built); !strings.Contains(out, "edited:") {
		t.Errorf("status of an edited unit:\n%s", out)
	}
}

// serviceRun runs agentbridge with args and env, wants exit code code,
// and returns its stdout (code 0) or its stderr.
func serviceRun(t *testing.T, env []string, code int, args ...string) string {
	t.Helper()
	var stdout, stderr strings.Builder
	a := &app{env: env, stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, backoff: fastBackoff}
	if got := a.exitCode(a.execute(t.Context(), args)); got != code {
		t.Fatalf("agentbridge %s: exit %d, want %d: %s%s", strings.Join(args, " "), got, code, stdout.String(), stderr.String())
	}
	if code != 0 {
		return stderr.String()
	}
	return stdout.String()
}
