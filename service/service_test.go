package service

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
	if fi, err := os.Stat(m.Path()); err != nil || fi.Mode().Perm()&^0o644 != 0 {
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

// A definition holds one checksum line over the rest of it; an edit
// anywhere, a second checksum line or none at all make it not intact.
func TestIntactDefinition(t *testing.T) {
	unit, _ := Unit("/home/ada/.local/bin/agentbridge")
	plist, _ := Plist("/Users/ada/.local/bin/agentbridge", "/Users/ada/Library/Logs/agentbridge.log")
	line := func(def []byte) string { return string(checksum.Find(def)) }
	for _, tc := range []struct {
		name string
		def  string
		want bool
	}{
		{"unit as written", string(unit), true},
		{"plist as written", string(plist), true},
		{"unit with a setting changed", strings.Replace(string(unit), "RestartSec=2s", "RestartSec=5s", 1), false},
		{"unit with a line added", string(unit) + "Environment=FOO=1\n", false},
		{"unit with CRLF line ends", strings.ReplaceAll(string(unit), "\n", "\r\n"), false},
		{"plist with an argument added", strings.Replace(string(plist), "<string>serve</string>", "<string>serve</string><string>--addr=0.0.0.0:7391</string>", 1), false},
		{"unit without its checksum", strings.Replace(string(unit), line(unit), "", 1), false},
		{"unit with its checksum twice", string(unit) + line(unit), false},
		{"the old hand-copied unit (no checksum)", "[Unit]\nDescription=agentbridge\n[Service]\nExecStart=%h/.local/bin/agentbridge serve\n", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := intactDefinition([]byte(tc.def)); got != tc.want {
				t.Errorf("intactDefinition = %v, want %v", got, tc.want)
			}
		})
	}
}

// A unit the user edited (or wrote) is never replaced or removed: install
// and uninstall refuse, say how to keep the change, and leave the file as
// it is; --force keeps a copy beside it before replacing it.
func TestEditedUnitIsKept(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(def []byte) []byte
	}{
		{"edited", func(def []byte) []byte {
			return bytes.Replace(def, []byte("RestartSec=2s"), []byte("RestartSec=30s"), 1)
		}},
		{"written by hand", func([]byte) []byte {
			return []byte("[Service]\nExecStart=/opt/agentbridge serve --addr 127.0.0.1:8000\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ran := fakeManager(t, "linux", true)
			def, _ := m.Definition()
			mine := tc.edit(def)
			if err := os.MkdirAll(filepath.Dir(m.Path()), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(m.Path(), mine, 0o644); err != nil {
				t.Fatal(err)
			}
			for name, plan := range map[string]func() (Plan, error){"install": m.Install, "uninstall": m.Uninstall} {
				p, err := plan()
				if !errors.Is(err, ErrEdited) || len(p) != 0 {
					t.Fatalf("%s of an edited unit: %v\n%s", name, err, p)
				}
				for _, want := range []string{m.Path(), "systemctl --user edit " + Name, "--force"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s error lacks %q: %v", name, want, err)
					}
				}
			}
			if st, _ := m.Status(ctx); !st.Edited || !st.Installed || st.Current {
				t.Errorf("status of an edited unit: %+v", st)
			}
			if b, _ := os.ReadFile(m.Path()); !bytes.Equal(b, mine) {
				t.Fatalf("the edited unit changed:\n%s", b)
			}
			m.Force = true
			p, err := m.Install()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.String(), "write "+m.Path()+".bak (a copy of the file there now)\n") {
				t.Errorf("forced install plan does not keep a copy:\n%s", p)
			}
			if err := m.Apply(ctx, p); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(m.Path() + ".bak"); !bytes.Equal(b, mine) {
				t.Errorf("copy of the edited unit:\n%s", b)
			}
			if b, _ := os.ReadFile(m.Path()); !bytes.Equal(b, def) {
				t.Errorf("forced install did not write the unit:\n%s", b)
			}
			if len(*ran) == 0 {
				t.Error("forced install did not enable the service")
			}
			// Edited again and forced again: the first copy stays.
			mine2 := append(slices.Clone(def), "# mine too\n"...)
			os.WriteFile(m.Path(), mine2, 0o644)
			p, _ = m.Install()
			if err := m.Apply(ctx, p); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(m.Path() + ".bak"); !bytes.Equal(b, mine) {
				t.Errorf("the first copy was overwritten:\n%s", b)
			}
			if b, _ := os.ReadFile(m.Path() + ".bak.2"); !bytes.Equal(b, mine2) {
				t.Errorf("the second copy:\n%s", b)
			}
		})
	}
}

// An intact unit agentbridge wrote earlier (another version's template, or
// another binary) is replaced without --force: it holds nothing of the
// user's.
func TestInstallReplacesAnOlderUnit(t *testing.T) {
	m, _ := fakeManager(t, "linux", true)
	old := seal([]byte("[Service]\nExecStart=\"/old/agentbridge\" serve\n"), 0, "# ", "")
	os.MkdirAll(filepath.Dir(m.Path()), 0o755)
	if err := os.WriteFile(m.Path(), old, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := m.Install()
	if err != nil {
		t.Fatal(err)
	}
	if p[0].Write != m.Path() || strings.Contains(p.String(), ".bak") {
		t.Fatalf("install over an older unit:\n%s", p)
	}
}

// Whatever else sits where the unit goes (a link a dotfiles manager
// keeps, a FIFO, a directory, a huge file) is left alone, without
// blocking or reading it whole; status says so.
func TestUnitPathHostile(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(path string) error
		kind string
	}{
		{"symlink to a unit", func(p string) error {
			u, _ := Unit("/x/agentbridge")
			target := filepath.Join(filepath.Dir(p), "dotfiles.service")
			if err := os.WriteFile(target, u, 0o644); err != nil {
				return err
			}
			return os.Symlink(target, p)
		}, "symbolic link"},
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "FIFO"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "directory"},
		{"sparse 1 GiB", func(p string) error { return errors.Join(os.WriteFile(p, nil, 0o644), os.Truncate(p, 1<<30)) }, "file over 64 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := fakeManager(t, "linux", false)
			os.MkdirAll(filepath.Dir(m.Path()), 0o755)
			if err := tc.make(m.Path()); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(m.Path())
			if _, err := m.Install(); !errors.Is(err, ErrEdited) || !strings.Contains(err.Error(), tc.kind) {
				t.Errorf("install: %v", err)
			}
			if _, err := m.Uninstall(); !errors.Is(err, ErrEdited) {
				t.Errorf("uninstall: %v", err)
			}
			if st, err := m.Status(context.Background()); err != nil || !st.Edited {
				t.Errorf("status: %+v %v", st, err)
			}
			after, _ := os.Lstat(m.Path())
			if !os.SameFile(before, after) || before.Mode() != after.Mode() {
				t.Error("the file at the unit's path was replaced")
			}
		})
	}
}
