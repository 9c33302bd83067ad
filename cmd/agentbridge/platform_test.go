package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/notify"
)

func TestBrowserOpener(t *testing.T) {
	for _, tc := range []struct {
		goos    string
		display bool
		want    string
	}{
		{"darwin", false, "open"}, // macOS sets no DISPLAY
		{"darwin", true, "open"},
		{"linux", true, "xdg-open"},
		{"linux", false, ""}, // a server or an ssh session: print the URL
		{"freebsd", true, "xdg-open"},
		{"windows", true, ""},
	} {
		if got := browserOpener(tc.goos, tc.display); got != tc.want {
			t.Errorf("browserOpener(%s, display %v) = %q, want %q", tc.goos, tc.display, got, tc.want)
		}
	}
}

// On Windows serve and demo refuse, naming WSL; elsewhere they serve.
func TestServableSaysUseWSLOnWindows(t *testing.T) {
	if err := servable("windows"); !errors.Is(err, errUseWSL) || !strings.Contains(err.Error(), "WSL") {
		t.Errorf("servable(windows) = %v, want the WSL advice", err)
	}
	for _, g := range []string{"linux", "darwin"} {
		if err := servable(g); err != nil {
			t.Errorf("servable(%s) = %v", g, err)
		}
	}
	var stdout, stderr strings.Builder
	a := &app{env: testEnv(t), stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, backoff: fastBackoff}
	old := goos
	goos = "windows"
	t.Cleanup(func() { goos = old })
	if code := a.exitCode(a.execute(t.Context(), []string{"serve", "--listen", "127.0.0.1:0"})); code != 1 || !strings.Contains(stderr.String(), "WSL") {
		t.Errorf("serve on windows: exit %d, stderr %q", code, stderr.String())
	}
}

// On macOS notify raises its notifications through osascript.
func TestDialDesktopOnMacOSUsesOsascript(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "osascript"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	d, err := dialDesktop("darwin", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.(*notify.Banner); !ok {
		t.Fatalf("dialDesktop(darwin) = %T, want *notify.Banner", d)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := dialDesktop("darwin", "", nil); !errors.Is(err, notify.ErrNoOsascript) {
		t.Fatalf("dialDesktop(darwin) without osascript: %v", err)
	}
}
