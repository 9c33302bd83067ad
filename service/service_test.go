package service

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeManager is a Manager over a temporary home whose commands are
// recorded, not run; systemd says whether a user systemd "runs".
func fakeManager(t *testing.T, goos string, systemd bool) (*Manager, *[][]string) {
	t.Helper()
	home := t.TempDir()
	bin := filepath.Join(home, ".local", "bin", "agentbridge")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var ran [][]string
	m := &Manager{GOOS: goos, Home: home, UID: 501, Binary: bin,
		Run: func(_ context.Context, argv []string) ([]byte, error) {
			ran = append(ran, argv)
			return []byte("active\n"), nil
		}}
	if systemd {
		m.RuntimeDir = filepath.Join(home, "run")
		if err := os.MkdirAll(filepath.Join(m.RuntimeDir, "systemd"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(m.RuntimeDir, "systemd", "private"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return m, &ran
}

func commands(p Plan) [][]string {
	var out [][]string
	for _, s := range p {
		if len(s.Run) > 0 {
			out = append(out, s.Run)
		}
	}
	return out
}

func TestUnitQuotesTheBinary(t *testing.T) {
	for _, bin := range []string{
		"/home/ada/.local/bin/agentbridge",
		`/home/ada/my tools/"x"/100%/a\b/agentbridge`,
	} {
		u, err := Unit(bin)
		if err != nil {
			t.Fatal(err)
		}
		if got := definedBinary(u, false); got != bin {
			t.Errorf("ExecStart of %q reads back as %q:\n%s", bin, got, u)
		}
		for _, want := range []string{"\nType=exec\n", "\nUMask=0077\n", "\nWantedBy=default.target\n", "EnvironmentFile=-%h/.config/agentbridge/env\n"} {
			if !bytes.Contains(u, []byte(want)) {
				t.Errorf("unit lacks %q", want)
			}
		}
	}
	if _, err := Unit("/a\nExecStartPre=/bin/evil"); err == nil {
		t.Error("a binary path with a newline was accepted")
	}
}

// systemd-analyze verify finds nothing wrong with the unit (where systemd
// is installed; CI installs it).
func TestUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	for _, name := range []string{"agentbridge", "with space"} {
		dir := t.TempDir()
		bin := filepath.Join(dir, name, "agentbridge")
		os.MkdirAll(filepath.Dir(bin), 0o755)
		if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		u, _ := Unit(bin)
		path := filepath.Join(dir, Name)
		if err := os.WriteFile(path, u, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sa, "--user", "verify", path)
		// A user manager needs a runtime directory, which CI lacks.
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+dir)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze --user verify: %v\n%s", err, out)
		}
	}
}

func TestPlist(t *testing.T) {
	bin := "/Users/ada/bin & tools/<agentbridge>"
	p, err := Plist(bin, "/Users/ada/Library/Logs/agentbridge.log")
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(p))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("plist is not well-formed XML: %v\n%s", err, p)
		}
	}
	if got := definedBinary(p, true); got != bin {
		t.Errorf("ProgramArguments[0] = %q, want %q", got, bin)
	}
	for _, want := range []string{"<string>" + Label + "</string>", "<string>serve</string>", "<key>RunAtLoad</key>\n\t<true/>", "<integer>63</integer>"} {
		if !bytes.Contains(p, []byte(want)) {
			t.Errorf("plist lacks %q:\n%s", want, p)
		}
	}
}

// Installing writes the unit, reloads and enables it; a second install
// changes nothing and only makes sure it is enabled.
func TestInstallIsIdempotent(t *testing.T) {
	ctx := context.Background()
	m, ran := fakeManager(t, "linux", true)
	p, err := m.Install()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "--now", Name}}
	if p[0].Write != m.Path() || !slices.EqualFunc(commands(p), want, slices.Equal) {
		t.Fatalf("first install plan:\n%s", p)
	}
	if err := m.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(filepath.Join(m.Home, ".config", "systemd", "user", Name))
	if err != nil || definedBinary(written, false) != m.Binary {
		t.Fatalf("unit not written for %s: %v\n%s", m.Binary, err, written)
	}
	p, _ = m.Install()
	if len(p) != 1 || !slices.Equal(p[0].Run, []string{"systemctl", "--user", "enable", "--now", Name}) {
		t.Fatalf("second install plan:\n%s", p)
	}
	// A new binary path rewrites the unit and restarts a running service.
	m.Binary += "2"
	p, _ = m.Install()
	if p[0].Write == "" || !slices.Equal(commands(p)[len(commands(p))-1], []string{"systemctl", "--user", "try-restart", Name}) {
		t.Fatalf("install of a moved binary:\n%s", p)
	}
	if len(*ran) != 2 {
		t.Errorf("ran %q", *ran)
	}
}

// Where no user systemd runs, install writes the unit and says how to
// enable it; dry-run output names every step and nothing is written.
func TestInstallWithoutSystemdAndDryRun(t *testing.T) {
	m, ran := fakeManager(t, "linux", false)
	m.ConfigHome = filepath.Join(m.Home, "cfg")
	p, err := m.Install()
	if err != nil {
		t.Fatal(err)
	}
	s := p.String()
	for _, want := range []string{"write " + filepath.Join(m.Home, "cfg", "systemd", "user", Name) + ":\n", "    ExecStart=\"" + m.Binary + "\" serve\n", "note: no user systemd runs here"} {
		if !strings.Contains(s, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, s)
		}
	}
	if len(commands(p)) != 0 {
		t.Errorf("commands without systemd: %q", commands(p))
	}
	if _, err := os.Stat(m.Path()); !os.IsNotExist(err) {
		t.Errorf("planning wrote the unit: %v", err)
	}
	if err := m.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(m.Path()); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("unit after apply: %v %v", fi, err)
	}
	if len(*ran) != 0 {
		t.Errorf("ran %q", *ran)
	}
}

func TestUninstall(t *testing.T) {
	ctx := context.Background()
	m, _ := fakeManager(t, "linux", true)
	if p, err := m.Uninstall(); err != nil || len(p) != 0 {
		t.Fatalf("uninstall of nothing: %v\n%s", err, p)
	}
	p, _ := m.Install()
	m.Apply(ctx, p)
	p, err := m.Uninstall()
	if err != nil {
		t.Fatal(err)
	}
	if want := "run systemctl --user disable --now " + Name + "\nremove " + m.Path() + "\nrun systemctl --user daemon-reload\n"; p.String() != want {
		t.Fatalf("uninstall plan:\n%s\nwant:\n%s", p, want)
	}
	if err := m.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.Path()); !os.IsNotExist(err) {
		t.Fatalf("unit still there: %v", err)
	}
	if p, _ := m.Uninstall(); len(p) != 0 {
		t.Fatalf("second uninstall: %s", p)
	}
}

func TestLaunchdInstallAndUninstall(t *testing.T) {
	ctx := context.Background()
	m, _ := fakeManager(t, "darwin", false)
	p, err := m.Install()
	if err != nil {
		t.Fatal(err)
	}
	plist := filepath.Join(m.Home, "Library", "LaunchAgents", Label+".plist")
	want := [][]string{{"launchctl", "bootout", "gui/501/" + Label}, {"launchctl", "bootstrap", "gui/501", plist}, {"launchctl", "enable", "gui/501/" + Label}}
	if p[0].Write != plist || !slices.EqualFunc(commands(p), want, slices.Equal) {
		t.Fatalf("launchd install plan:\n%s", p)
	}
	m.Apply(ctx, p)
	p, _ = m.Install()
	if p[0].Write != "" || !p[0].MayFail {
		t.Fatalf("second launchd install rewrites or insists on bootstrapping:\n%s", p)
	}
	p, _ = m.Uninstall()
	if want := "run launchctl bootout gui/501/" + Label + "\nremove " + plist + "\n"; p.String() != want {
		t.Fatalf("launchd uninstall plan:\n%s", p)
	}
}

// Status says where the unit is, what it starts, and when that binary is
// gone (make clean, a moved checkout).
func TestStatus(t *testing.T) {
	ctx := context.Background()
	m, _ := fakeManager(t, "linux", true)
	st, err := m.Status(ctx)
	if err != nil || st.Installed {
		t.Fatalf("status before install: %+v %v", st, err)
	}
	p, _ := m.Install()
	m.Apply(ctx, p)
	st, _ = m.Status(ctx)
	if !st.Installed || st.Binary != m.Binary || st.Missing || !st.Current || st.Manager != "active" {
		t.Fatalf("status after install: %+v", st)
	}
	os.Remove(m.Binary)
	if st, _ = m.Status(ctx); !st.Missing {
		t.Fatalf("status with the binary gone: %+v", st)
	}
}

func TestWindowsHasNoServiceManager(t *testing.T) {
	m, _ := fakeManager(t, "windows", false)
	if _, err := m.Install(); err == nil {
		t.Fatal("install on windows succeeded")
	}
}
