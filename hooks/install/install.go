// Package install adds the bridge's hook command to an agent's own
// settings, removes it again, and says what is installed: Claude Code's
// settings.json (under CLAUDE_CONFIG_DIR), Codex's hooks.json and the
// hooks feature flag of its config.toml (under CODEX_HOME), Gemini CLI's
// settings.json (under its .gemini directory), Qwen Code's settings.json
// (under QWEN_HOME, default ~/.qwen).
//
// Edits merge with what the user has: other settings and hooks are kept
// in their order and spelling, the file keeps its indentation, and TOML
// is edited line by line so that its comments and layout stay. Installing
// twice changes nothing the second time; before its first change to a file
// the package copies it beside itself (<file>.agentbridge-backup, never
// overwritten). Uninstall removes exactly the entries install added (and
// an event list or a hooks object it leaves empty), and a file install
// created is removed when nothing else is left in it.
package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbridge/agentbridge/hooks"
	"github.com/agentbridge/agentbridge/internal/smallfile"
)

// BackupSuffix is appended to a file's name for its backup.
const BackupSuffix = ".agentbridge-backup"

// Timeout is the hook timeout written for each handler, in seconds (the
// command itself ends within one second); Gemini CLI counts milliseconds.
const Timeout = 5

// CodexTimeout is the timeout written for Codex's handlers, in seconds:
// Codex clamps its SessionEnd and Interrupt hooks to 3 s and warns about
// it at every start ("clamping Interrupt hook timeout to 3s"), so every
// handler gets 3.
const CodexTimeout = 3

// maxSettings bounds a settings file that is read.
const maxSettings = 4 << 20

// Harnesses are the harness ids that take hooks, sorted.
var Harnesses = []string{"claude-code", "codex", "gemini-cli", "qwen-code"}

// spec is where a harness keeps its hooks.
type spec struct {
	source  string // the source id: what `agentbridge hook` is given
	file    string // the hooks file in the agent's home
	config  bool   // Codex: the feature flag in config.toml
	timeout int    // the handler's timeout, in the agent's unit
}

var specs = map[string]spec{
	"claude-code": {source: "claude-code", file: "settings.json", timeout: Timeout},
	"codex":       {source: "codex", file: "hooks.json", config: true, timeout: CodexTimeout},
	"gemini-cli":  {source: "gemini", file: "settings.json", timeout: Timeout * 1000},
	"qwen-code":   {source: "qwen", file: "settings.json", timeout: Timeout},
}

// Source is the source id of a harness with hooks ("" for none).
func Source(harness string) string { return specs[harness].source }

// Target is one agent's home where hooks are installed.
type Target struct {
	Harness string // "claude-code" or "codex"
	Home    string // the agent's home directory (CLAUDE_CONFIG_DIR, CODEX_HOME)
}

// HooksFile is the JSON file that holds the agent's hooks.
func (t Target) HooksFile() string {
	if f := specs[t.Harness].file; f != "" {
		return filepath.Join(t.Home, f)
	}
	return filepath.Join(t.Home, "settings.json")
}

func (t Target) source() string { return specs[t.Harness].source }

// ConfigFile is Codex's config.toml ("" for other harnesses).
func (t Target) ConfigFile() string {
	if specs[t.Harness].config {
		return filepath.Join(t.Home, "config.toml")
	}
	return ""
}

func (t Target) check() error {
	if !slices.Contains(Harnesses, t.Harness) {
		return fmt.Errorf("no hooks for harness %q (harnesses with hooks: %s)", t.Harness, strings.Join(Harnesses, ", "))
	}
	if !filepath.IsAbs(t.Home) {
		return fmt.Errorf("%s: the agent's home must be an absolute path", t.Harness)
	}
	return nil
}

// Command is the hook command line for a source run by the program at
// prog: "'/opt/my tools/agentbridge' hook claude-code", quoted for sh.
func Command(prog, source string) string { return shellQuote(prog) + " hook " + source }

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+@:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ours reports whether a hook command is one install writes for source,
// and returns the program it runs.
func ours(cmd, source string) (prog string, ok bool) {
	cmd = strings.TrimSpace(cmd)
	rest, found := strings.CutSuffix(cmd, " hook "+source)
	if !found {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if len(rest) >= 2 && rest[0] == '\'' && rest[len(rest)-1] == '\'' {
		rest = strings.ReplaceAll(rest[1:len(rest)-1], `'\''`, "'")
	} else if strings.ContainsAny(rest, " \t'\"") {
		return "", false
	}
	if !strings.HasPrefix(filepath.Base(rest), "agentbridge") {
		return "", false
	}
	return rest, true
}

// Change is what one call did to one file.
type Change struct {
	File    string
	Changed bool
	Backup  string // the backup made now ("" when none was needed)
	Removed bool   // the file was removed (uninstall of a file install created)
}

// Install adds the hook command (Command) for every event the bridge takes
// from the harness, and for Codex turns its hooks feature on. It fails
// without changing anything when a file cannot be read, parsed or written.
func Install(t Target, command string) ([]Change, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	events := hooks.Events(t.source())
	var plan []edit
	e, err := planJSON(t.HooksFile(), func(doc *node) error {
		return addHandlers(doc, t.source(), command, events, specs[t.Harness].timeout)
	})
	if err != nil {
		return nil, err
	}
	plan = append(plan, e)
	if cf := t.ConfigFile(); cf != "" {
		e, err := planText(cf, enableFeature)
		if err != nil {
			return nil, err
		}
		plan = append(plan, e)
	}
	return apply(plan, false)
}

// Uninstall removes what Install added.
func Uninstall(t Target) ([]Change, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	var plan []edit
	e, err := planJSON(t.HooksFile(), func(doc *node) error { removeHandlers(doc, t.source()); return nil })
	if err != nil {
		return nil, err
	}
	plan = append(plan, e)
	if cf := t.ConfigFile(); cf != "" {
		e, err := planText(cf, func(s string) (string, error) { return disableFeature(s), nil })
		if err != nil {
			return nil, err
		}
		plan = append(plan, e)
	}
	return apply(plan, true)
}

// State is what Status finds for one harness.
type State struct {
	Harness  string   `json:"harness"`
	File     string   `json:"file"`              // the hooks file
	Events   []string `json:"events"`            // the events whose hook command is installed
	Missing  []string `json:"missing"`           // the events the bridge takes that have none
	Programs []string `json:"programs"`          // the programs the installed commands run, distinct
	Current  bool     `json:"current"`           // something is installed and every command runs prog
	Feature  string   `json:"feature,omitempty"` // Codex: "on", "on (default)", "off"; "" otherwise
	Problem  string   `json:"problem,omitempty"` // a file that cannot be read or parsed, else ""
}

// Installed reports whether every event has the hook command.
func (s State) Installed() bool { return len(s.Events) > 0 && len(s.Missing) == 0 }

// Status says what is installed for t and whether it runs prog.
func Status(t Target, prog string) State {
	st := State{Harness: t.Harness, File: t.HooksFile()}
	if err := t.check(); err != nil {
		st.Problem = err.Error()
		return st
	}
	b, err := readFile(st.File)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		st.Problem = err.Error()
		return st
	}
	doc, err := parseDoc(b)
	if err != nil {
		st.Problem = fmt.Sprintf("%s: %v", filepath.Base(st.File), err)
		return st
	}
	found := map[string]bool{}
	forHandlers(doc, func(ev string, h *node) {
		if p, ok := ours(str(h.get("command").rawOr()), t.source()); ok {
			found[ev] = true
			if !slices.Contains(st.Programs, p) {
				st.Programs = append(st.Programs, p)
			}
		}
	})
	for _, ev := range hooks.Events(t.source()) {
		if found[ev] {
			st.Events = append(st.Events, ev)
		} else {
			st.Missing = append(st.Missing, ev)
		}
	}
	st.Current = len(st.Programs) == 1 && st.Programs[0] == prog
	if cf := t.ConfigFile(); cf != "" {
		b, err := readFile(cf)
		switch {
		case errors.Is(err, os.ErrNotExist):
			st.Feature = "on (default)"
		case err != nil:
			st.Problem = err.Error()
		default:
			st.Feature = featureState(string(b))
		}
	}
	return st
}

func (n *node) rawOr() []byte {
	if n == nil {
		return nil
	}
	return n.raw
}

// forHandlers calls fn for every handler object of every event of a
// hooks document ({"hooks": {"Event": [{"matcher"?, "hooks": [handler…]}]}}).
func forHandlers(doc *node, fn func(event string, handler *node)) {
	hs := doc.get("hooks")
	if hs == nil || hs.kind != '{' {
		return
	}
	for i, name := range hs.names {
		groups := hs.vals[i]
		if groups.kind != '[' {
			continue
		}
		for _, g := range groups.vals {
			if list := g.get("hooks"); list != nil && list.kind == '[' {
				for _, h := range list.vals {
					if h.kind == '{' {
						fn(str(name), h)
					}
				}
			}
		}
	}
}

// addHandlers makes sure every event has one handler running command:
// an existing one of ours gets the command (another binary path) and the
// timeout (an older install wrote another), else a group with one handler
// is appended.
func addHandlers(doc *node, source, command string, events []string, timeout int) error {
	hs := doc.get("hooks")
	if hs == nil {
		hs = &node{kind: '{'}
		doc.set("hooks", hs)
	}
	if hs.kind != '{' {
		return errors.New(`"hooks" is not an object`)
	}
	for _, ev := range events {
		groups := hs.get(ev)
		if groups == nil {
			groups = &node{kind: '['}
			hs.set(ev, groups)
		}
		if groups.kind != '[' {
			return fmt.Errorf("hooks.%s is not a list", ev)
		}
		have := false
		for _, g := range groups.vals {
			list := g.get("hooks")
			if list == nil || list.kind != '[' {
				continue
			}
			for _, h := range list.vals {
				if _, ok := ours(str(h.get("command").rawOr()), source); ok {
					if !have && str(h.get("command").rawOr()) != command {
						h.set("command", strNode(command))
					}
					if want := fmt.Sprint(timeout); !have && string(h.get("timeout").rawOr()) != want {
						h.set("timeout", scalar(want))
					}
					have = true
				}
			}
		}
		if !have {
			handler := &node{kind: '{'}
			handler.set("type", strNode("command"))
			handler.set("command", strNode(command))
			handler.set("timeout", scalar(fmt.Sprint(timeout)))
			list := &node{kind: '[', vals: []*node{handler}}
			group := &node{kind: '{'}
			group.set("hooks", list)
			groups.vals = append(groups.vals, group)
		}
	}
	return nil
}

// removeHandlers removes every handler of ours, the groups it leaves
// without handlers, the event lists it leaves empty and the hooks object
// when nothing is left in it.
func removeHandlers(doc *node, source string) {
	hs := doc.get("hooks")
	if hs == nil || hs.kind != '{' {
		return
	}
	removed := false
	for i := 0; i < len(hs.vals); i++ {
		groups := hs.vals[i]
		if groups.kind != '[' {
			continue
		}
		touched := false
		keep := groups.vals[:0:0]
		for _, g := range groups.vals {
			list := g.get("hooks")
			if list != nil && list.kind == '[' {
				n := len(list.vals)
				list.vals = slices.DeleteFunc(slices.Clone(list.vals), func(h *node) bool {
					_, ok := ours(str(h.get("command").rawOr()), source)
					return ok
				})
				if len(list.vals) < n {
					touched = true
					if len(list.vals) == 0 {
						continue
					}
				}
			}
			keep = append(keep, g)
		}
		groups.vals = keep
		if touched {
			removed = true
			if len(groups.vals) == 0 {
				hs.del(str(hs.names[i]))
				i--
			}
		}
	}
	if removed && len(hs.vals) == 0 {
		doc.del("hooks")
	}
}

// edit is one planned file change.
type edit struct {
	file    string
	existed bool
	mode    os.FileMode
	before  []byte
	after   []byte
}

// readFile reads a settings file safely (a FIFO or device is refused, a
// huge file is refused, never read whole).
func readFile(path string) ([]byte, error) {
	b, err := smallfile.Read(path, maxSettings)
	switch {
	case errors.Is(err, smallfile.ErrNotRegular):
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	case errors.Is(err, smallfile.ErrTooLarge):
		return nil, fmt.Errorf("%s is over %d bytes", filepath.Base(path), maxSettings)
	}
	return b, err
}

// resolve follows a symlinked settings file (dotfile managers), so that
// the file it points to is the one edited.
func resolve(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return path
}

func planFile(path string) (edit, error) {
	path = resolve(path)
	e := edit{file: path, mode: 0o600}
	b, err := readFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return e, err
	default:
		fi, _ := os.Stat(path)
		e.existed, e.mode, e.before = true, fi.Mode().Perm(), b
	}
	return e, nil
}

func planJSON(path string, change func(*node) error) (edit, error) {
	e, err := planFile(path)
	if err != nil {
		return e, err
	}
	doc, err := parseDoc(e.before)
	if err != nil {
		return e, fmt.Errorf("%s: %w (nothing was changed)", path, err)
	}
	indent, final := layout(e.before)
	if err := change(doc); err != nil {
		return e, fmt.Errorf("%s: %w (nothing was changed)", path, err)
	}
	if !e.existed && len(doc.vals) == 0 {
		e.after = nil
	} else if len(doc.vals) == 0 && len(strings.TrimSpace(string(e.before))) == 0 {
		e.after = e.before
	} else {
		e.after = format(doc, indent, final)
		if reformatted := format(mustParse(e.before), indent, final); string(reformatted) == string(e.after) {
			e.after = e.before // nothing changed but the layout: keep the user's bytes
		}
	}
	return e, nil
}

func mustParse(b []byte) *node {
	n, err := parseDoc(b)
	if err != nil {
		return &node{kind: '{'}
	}
	return n
}

func planText(path string, change func(string) (string, error)) (edit, error) {
	e, err := planFile(path)
	if err != nil {
		return e, err
	}
	after, err := change(string(e.before))
	if err != nil {
		return e, fmt.Errorf("%s: %w (nothing was changed)", path, err)
	}
	e.after = []byte(after)
	return e, nil
}

// apply writes the planned files: first it checks that each one that
// changes can be written, so that a read-only file changes nothing at all.
// On uninstall, a file install created (it has no backup) that is left
// empty is removed.
func apply(plan []edit, uninstall bool) ([]Change, error) {
	var todo []edit
	for _, e := range plan {
		if string(e.before) == string(e.after) && (e.existed || len(e.after) == 0) {
			continue
		}
		todo = append(todo, e)
	}
	for _, e := range todo {
		if e.existed {
			// a file without its owner's write bit is read-only on
			// purpose, also for root (whom access(2) lets write it)
			if e.mode&0o200 == 0 {
				return nil, fmt.Errorf("%s is read-only; nothing was changed", e.file)
			}
			if err := unix.Access(e.file, unix.W_OK); err != nil {
				return nil, fmt.Errorf("%s cannot be written (%w); nothing was changed", e.file, err)
			}
		}
		dir := filepath.Dir(e.file)
		if _, err := os.Stat(dir); err == nil {
			if err := unix.Access(dir, unix.W_OK); err != nil {
				return nil, fmt.Errorf("%s cannot be written (%w); nothing was changed", dir, err)
			}
		}
	}
	var out []Change
	for _, e := range todo {
		c := Change{File: e.file, Changed: true}
		backup := e.file + BackupSuffix
		_, noBackup := os.Stat(backup)
		if uninstall && noBackup != nil && isEmpty(e.after) {
			if err := os.Remove(e.file); err != nil && !errors.Is(err, os.ErrNotExist) {
				return out, err
			}
			c.Removed = true
			out = append(out, c)
			continue
		}
		if e.existed && noBackup != nil && !uninstall {
			if err := writeAtomic(backup, e.before, e.mode); err != nil {
				return out, fmt.Errorf("back up %s: %w", e.file, err)
			}
			c.Backup = backup
		}
		if err := os.MkdirAll(filepath.Dir(e.file), 0o700); err != nil {
			return out, err
		}
		if err := writeAtomic(e.file, e.after, e.mode); err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

func isEmpty(b []byte) bool {
	s := strings.TrimSpace(string(b))
	return s == "" || s == "{}"
}

// writeAtomic writes b to path through a temporary file in the same
// directory, with mode.
func writeAtomic(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
