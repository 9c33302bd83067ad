package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// service install --dry-run prints the unit it would write, pointing at the
// binary given, and writes nothing; install then writes it, a second
// install changes nothing, status names the binary and uninstall removes it.
func TestServiceCommand(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(home, "p", "bin", "agentbridge")
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	unit := filepath.Join(home, ".config", "systemd", "user", "agentbridge.service")
	runCmd := func(args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		a := &app{env: env, stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, backoff: fastBackoff}
		if code := a.exitCode(a.execute(t.Context(), args)); code != 0 {
			t.Fatalf("agentbridge %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
		return stdout.String()
	}
	goosWas := goos
	goos = "linux"
	t.Cleanup(func() { goos = goosWas })

	out := runCmd("service", "install", "--dry-run", "--binary", bin)
	if !strings.Contains(out, "write "+unit+":") || !strings.Contains(out, `ExecStart="`+bin+`" serve`) {
		t.Fatalf("dry run:\n%s", out)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Fatalf("dry run wrote the unit: %v", err)
	}
	runCmd("service", "install", "--binary", bin)
	b, err := os.ReadFile(unit)
	if err != nil || !strings.Contains(string(b), `ExecStart="`+bin+`" serve`) {
		t.Fatalf("unit after install: %v\n%s", err, b)
	}
	if out := runCmd("service", "install", "--binary", bin); strings.Contains(out, "write ") {
		t.Fatalf("second install rewrote the unit:\n%s", out)
	}
	if out := runCmd("service", "status", "--binary", bin); !strings.Contains(out, "starts:    "+bin+" (MISSING") {
		t.Fatalf("status with the binary not there:\n%s", out)
	}
	// The .deb's unit, whatever the build host.
	goos = "darwin"
	if out := runCmd("service", "unit", "--binary", "/usr/bin/agentbridge"); !strings.Contains(out, "ExecStart=\"/usr/bin/agentbridge\" serve\n") {
		t.Fatalf("service unit:\n%s", out)
	}
	goos = "linux"
	runCmd("service", "uninstall", "--binary", bin)
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Fatalf("unit after uninstall: %v", err)
	}
}
