// Package service runs the bridge at login: it writes, enables and
// removes a systemd user unit on Linux and a launchd agent on macOS that
// start `agentbridge serve` from the installed binary. Every change is a
// Plan first, so that --dry-run prints exactly what install or uninstall
// would do, and running either twice changes nothing the second time.
package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge/internal/smallfile"
)

// Name is the systemd unit's name; Label the launchd agent's.
const (
	Name  = "agentbridge.service"
	Label = "io.github.agentbridge"
)

// Manager knows where this user's service definitions live and how to
// tell the service manager about them.
type Manager struct {
	// GOOS picks systemd ("linux" and other unixes) or launchd ("darwin").
	GOOS string
	// Home is the user's home; ConfigHome is $XDG_CONFIG_HOME ("":
	// Home/.config); RuntimeDir is $XDG_RUNTIME_DIR, where a running user
	// systemd keeps its socket.
	Home, ConfigHome, RuntimeDir string
	// UID is the user's id (launchd's gui/<uid> domain).
	UID int
	// Binary is the absolute path of the agentbridge the service runs.
	Binary string
	// Force lets Install replace, and Uninstall remove, a definition that
	// was edited since agentbridge wrote it (or that it never wrote); a
	// copy of it is kept beside it with the suffix .bak.
	Force bool
	// Run runs a command of the service manager and returns its combined
	// output; nil: exec.
	Run func(ctx context.Context, argv []string) ([]byte, error)
}

// ErrUnsupported is (wrapped in) the error of a Manager on a platform
// without a service manager it knows (Windows).
var ErrUnsupported = errors.New("no service manager on this platform (systemd or launchd)")

// ErrEdited is (wrapped in) the error of Install and Uninstall when the
// definition in place is not one agentbridge wrote as it wrote it: the
// user edited it, wrote it, or put a link or something else there. It is
// left as it is unless the Manager is told to Force.
var ErrEdited = errors.New("edited since agentbridge wrote it")

// maxDefinition bounds the definition read back: agentbridge's is ~1 KiB.
const maxDefinition = 64 << 10

// found is what is at the definition's path now.
type found struct {
	state   int    // absent, intact, edited or other
	content []byte // a regular file's content (intact or edited)
	kind    string // other: what it is ("symbolic link", "FIFO" …)
}

const (
	absent = iota // nothing there
	intact        // a definition agentbridge wrote, unchanged since
	edited        // a regular file agentbridge did not write as it is
	other         // not a regular file
)

// find looks at the definition's path without following a link and
// without reading more than maxDefinition or blocking on a FIFO.
func (m Manager) find() (found, error) {
	path := m.Path()
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return found{state: absent}, nil
	}
	if err != nil {
		return found{}, fmt.Errorf("service: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return found{state: other, kind: smallfile.Type(fi.Mode())}, nil
	}
	b, err := smallfile.Read(path, maxDefinition)
	switch {
	case errors.Is(err, smallfile.ErrTooLarge):
		return found{state: other, kind: "file over 64 KiB"}, nil
	case err != nil:
		return found{}, fmt.Errorf("service: read %s: %w", path, err)
	case !intactDefinition(b):
		return found{state: edited, content: b}, nil
	}
	return found{state: intact, content: b}, nil
}

// refuse is the error for a definition that is not agentbridge's as it
// wrote it, saying how to keep the user's changes.
func (m Manager) refuse(f found, doing string) error {
	what := "was changed since agentbridge wrote it, or not written by it"
	if f.state == other {
		what = "is a " + f.kind + ", not a file agentbridge wrote"
	}
	how := "to keep your changes across installs, put them in a drop-in (systemctl --user edit " + Name + ") and leave the unit as agentbridge writes it"
	if m.launchd() {
		how = "agentbridge rewrites the agent when it is installed again"
	}
	return fmt.Errorf("service: %s %s; it is left as it is (%w). %s; to %s it anyway, run again with --force (a copy is kept as %s.bak)",
		m.Path(), what, ErrEdited, how, doing, filepath.Base(m.Path()))
}

// keep is the step that saves the user's own definition beside it before
// it is replaced or removed (nothing for a link or a special file, whose
// target is not touched).
func (m Manager) keep(f found) Plan {
	if f.state != edited {
		return nil
	}
	return Plan{{Write: freeName(m.Path() + ".bak"), Content: f.content, Copy: true}}
}

// freeName is name, or name.2, name.3 … the first that is not there, so
// that an earlier copy is never overwritten.
func freeName(name string) string {
	free := name
	for i := 2; ; i++ {
		if _, err := os.Lstat(free); err != nil {
			return free // not there (or not readable: the write says why)
		}
		free = name + "." + strconv.Itoa(i)
	}
}

func (m Manager) launchd() bool { return m.GOOS == "darwin" }

func (m Manager) check() error {
	if m.GOOS == "windows" {
		return ErrUnsupported
	}
	if m.Home == "" || !filepath.IsAbs(m.Home) {
		return errors.New("service: HOME is not set to an absolute path")
	}
	if !filepath.IsAbs(m.Binary) {
		return fmt.Errorf("service: the binary %q is not an absolute path", m.Binary)
	}
	return nil
}

// Path is the file that defines the service: the unit in
// $XDG_CONFIG_HOME/systemd/user, or the agent in ~/Library/LaunchAgents.
func (m Manager) Path() string {
	if m.launchd() {
		return filepath.Join(m.Home, "Library", "LaunchAgents", Label+".plist")
	}
	cfg := m.ConfigHome
	if cfg == "" || !filepath.IsAbs(cfg) {
		cfg = filepath.Join(m.Home, ".config")
	}
	return filepath.Join(cfg, "systemd", "user", Name)
}

// Definition is the unit or the plist for m.Binary.
func (m Manager) Definition() ([]byte, error) {
	if m.launchd() {
		return Plist(m.Binary, filepath.Join(m.Home, "Library", "Logs", "agentbridge.log"))
	}
	return Unit(m.Binary)
}

// Running reports whether the service manager runs for this user: a user
// systemd (its private socket in $XDG_RUNTIME_DIR), or launchd (always on
// macOS). Where none runs (a container, CI, an SSH session without
// lingering) install writes the definition and says how to enable it.
func (m Manager) Running() bool {
	if m.launchd() {
		return true
	}
	if m.RuntimeDir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(m.RuntimeDir, "systemd", "private"))
	return err == nil
}

func (m Manager) domain() string { return "gui/" + strconv.Itoa(m.UID) }

// Install plans writing the definition (unless it is there as it should
// be) and enabling and starting the service. A definition the user
// edited is never replaced unless m.Force.
func (m Manager) Install() (Plan, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	def, err := m.Definition()
	if err != nil {
		return nil, err
	}
	f, err := m.find()
	if err != nil {
		return nil, err
	}
	if (f.state == edited || f.state == other) && !m.Force {
		return nil, m.refuse(f, "replace")
	}
	path := m.Path()
	p := m.keep(f)
	changed := f.state != intact || !bytes.Equal(f.content, def)
	if changed {
		p = append(p, Step{Write: path, Content: def})
	}
	if !m.Running() {
		p = append(p, Step{Note: "no user systemd runs here: the unit is written but not enabled; in a login session run: systemctl --user daemon-reload && systemctl --user enable --now " + Name})
		return p, nil
	}
	if m.launchd() {
		if changed {
			// A loaded agent keeps its old definition until booted out.
			p = append(p, Step{Run: []string{"launchctl", "bootout", m.domain() + "/" + Label}, MayFail: true})
		}
		p = append(p, Step{Run: []string{"launchctl", "bootstrap", m.domain(), path}, MayFail: !changed},
			Step{Run: []string{"launchctl", "enable", m.domain() + "/" + Label}})
		return p, nil
	}
	if changed {
		p = append(p, Step{Run: []string{"systemctl", "--user", "daemon-reload"}})
	}
	p = append(p, Step{Run: []string{"systemctl", "--user", "enable", "--now", Name}})
	if changed && f.state != absent {
		// A running service keeps the binary it started with.
		p = append(p, Step{Run: []string{"systemctl", "--user", "try-restart", Name}})
	}
	return p, nil
}

// Uninstall plans stopping and disabling the service and removing its
// definition; nothing when it is not installed. A definition the user
// edited is left (and the service left running) unless m.Force.
func (m Manager) Uninstall() (Plan, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	f, err := m.find()
	if err != nil || f.state == absent {
		return nil, err
	}
	if f.state != intact && !m.Force {
		return nil, m.refuse(f, "remove")
	}
	path := m.Path()
	var p Plan
	if m.Running() {
		if m.launchd() {
			p = append(p, Step{Run: []string{"launchctl", "bootout", m.domain() + "/" + Label}, MayFail: true})
		} else {
			p = append(p, Step{Run: []string{"systemctl", "--user", "disable", "--now", Name}, MayFail: true})
		}
	}
	p = append(p, m.keep(f)...)
	p = append(p, Step{Remove: path})
	if m.Running() && !m.launchd() {
		p = append(p, Step{Run: []string{"systemctl", "--user", "daemon-reload"}})
	}
	return p, nil
}

// Status is what `agentbridge service status` reports.
type Status struct {
	Path      string // the definition's file
	Installed bool   // something is there
	Edited    bool   // it is not what agentbridge wrote (edited, or not a file)
	Binary    string // the agentbridge it starts ("" when not installed or not known)
	Missing   bool   // Binary does not exist (moved, or removed by make clean)
	Current   bool   // the definition is the one Install would write now
	Manager   string // what the service manager says ("" when none runs)
}

// Status reads the definition and asks the service manager.
func (m Manager) Status(ctx context.Context) (Status, error) {
	if err := m.check(); err != nil {
		return Status{}, err
	}
	st := Status{Path: m.Path()}
	f, err := m.find()
	if err != nil {
		return st, err
	}
	st.Installed = f.state != absent
	st.Edited = f.state == edited || f.state == other
	if f.content != nil {
		st.Binary = definedBinary(f.content, m.launchd())
		if st.Binary != "" {
			_, serr := os.Stat(st.Binary)
			st.Missing = serr != nil
		}
		def, _ := m.Definition()
		st.Current = bytes.Equal(f.content, def)
	}
	if m.Running() {
		argv := []string{"systemctl", "--user", "is-active", Name}
		if m.launchd() {
			argv = []string{"launchctl", "print", m.domain() + "/" + Label}
		}
		out, _ := m.run(ctx, argv)
		st.Manager = firstLine(string(out))
	}
	return st, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func (m Manager) run(ctx context.Context, argv []string) ([]byte, error) {
	if m.Run != nil {
		return m.Run(ctx, argv)
	}
	return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
}

// Apply carries out p: it writes (atomically: a synced temporary file
// renamed over the old) and removes files and runs the commands in
// order, and stops at the first failure (of a step that may not fail).
func (m Manager) Apply(ctx context.Context, p Plan) error {
	for _, s := range p {
		switch {
		case s.Write != "":
			if err := os.MkdirAll(filepath.Dir(s.Write), 0o755); err != nil {
				return fmt.Errorf("service: %w", err)
			}
			if err := writeFile(s.Write, s.Content); err != nil {
				return fmt.Errorf("service: write %s: %w", s.Write, err)
			}
		case s.Remove != "":
			if err := os.Remove(s.Remove); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("service: %w", err)
			}
		case len(s.Run) > 0:
			if out, err := m.run(ctx, s.Run); err != nil && !s.MayFail {
				return fmt.Errorf("service: %s: %w: %s", strings.Join(s.Run, " "), err, firstLine(string(out)))
			}
		}
	}
	return nil
}

// Step is one change of a Plan: exactly one of Write (with Content),
// Remove, Run or Note.
type Step struct {
	Write   string
	Content []byte
	Copy    bool // Write saves the user's own definition (not printed)
	Remove  string
	Run     []string
	MayFail bool // Run: a failure is expected when the service is not loaded
	Note    string
}

// Plan is what install or uninstall does, in order.
type Plan []Step

// String says the plan, one step a line; a written file follows its step,
// indented.
func (p Plan) String() string { return p.say(true) }

// Brief says the plan without the files' content.
func (p Plan) Brief() string { return p.say(false) }

func (p Plan) say(content bool) string {
	var b strings.Builder
	for _, s := range p {
		switch {
		case s.Write != "" && s.Copy:
			fmt.Fprintf(&b, "write %s (a copy of the file there now)\n", s.Write)
		case s.Write != "" && !content:
			fmt.Fprintf(&b, "write %s\n", s.Write)
		case s.Write != "":
			fmt.Fprintf(&b, "write %s:\n", s.Write)
			for _, l := range strings.SplitAfter(strings.TrimSuffix(string(s.Content), "\n"), "\n") {
				b.WriteString("    " + l)
			}
			b.WriteString("\n")
		case s.Remove != "":
			fmt.Fprintf(&b, "remove %s\n", s.Remove)
		case len(s.Run) > 0:
			fmt.Fprintf(&b, "run %s\n", strings.Join(s.Run, " "))
		case s.Note != "":
			fmt.Fprintf(&b, "note: %s\n", s.Note)
		}
	}
	return b.String()
}
