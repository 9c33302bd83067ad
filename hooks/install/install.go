// Package install adds the bridge's hook command to an agent's own
// settings, removes it again, and says what is installed: Claude Code's
// settings.json (under CLAUDE_CONFIG_DIR), Codex's hooks.json and the
// hooks feature flag of its config.toml (under CODEX_HOME), Gemini CLI's
// settings.json (under its .gemini directory), Qwen Code's settings.json
// (under QWEN_HOME, default ~/.qwen).
//
// Edits merge with what the user has: a file is parsed with a real parser
// that keeps its text (hujson for JSON, go-toml's for TOML), only the
// bridge's own entries (those carrying Mark) are added, changed or
// removed, and everything else keeps its bytes: other settings, the
// user's hooks, comments, layout. A file the agent would read differently
// from the edit (a name or table twice, a byte order mark, comments the
// agent does not take) is refused, and every edit is read back before it
// is written. Plans are made for every file first (PlanInstall,
// PlanUninstall) and written together by Apply, atomically per file and
// all or none; Edit.Diff shows a plan. Installing twice changes nothing
// the second time; before its first change to a file the package copies
// it beside itself (<file>.agentbridge-backup, never overwritten).
// Uninstall removes exactly the entries install added (and an event list
// or a hooks object it leaves empty), and a file install created is
// removed when nothing else is left in it.
package install

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"github.com/tailscale/hujson"

	"github.com/agentbridge/agentbridge/hooks"
	"github.com/agentbridge/agentbridge/internal/binpath"
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

// ClaudeAnswerWait is how long an answering PermissionRequest hook of
// Claude Code waits, in seconds (docs/answering.md): Claude Code keeps its
// own dialog usable while the hook runs, so a long wait costs nothing.
const ClaudeAnswerWait = 300

// CodexAnswerWait is how long an answering PermissionRequest hook of Codex
// waits, in seconds (docs/answering.md): Codex shows its own approval only
// once the hook has ended, so the wait is short.
const CodexAnswerWait = 20

// answerMargin is added to an answering hook's wait for its handler's
// timeout: the agent must never kill the hook before it gives up itself.
const answerMargin = 5

// Answerable reports whether a harness's permission prompts can be
// answered through the bridge (install --answer), and its default wait.
func Answerable(harness string) (wait int, ok bool) {
	w := specs[harness].answer
	return w, w > 0
}

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
	dialect dialect
	// answer is the default wait of an answering PermissionRequest hook
	// (AnswerCommand), in seconds; 0: the harness cannot be answered
	answer int
}

var specs = map[string]spec{
	"claude-code": {source: "claude-code", file: "settings.json", timeout: Timeout, answer: ClaudeAnswerWait},
	"codex":       {source: "codex", file: "hooks.json", config: true, timeout: CodexTimeout, answer: CodexAnswerWait},
	"gemini-cli":  {source: "gemini", file: "settings.json", timeout: Timeout * 1000, dialect: dialect{comments: true}},
	"qwen-code":   {source: "qwen", file: "settings.json", timeout: Timeout, dialect: dialect{comments: true}},
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

// Mark is the argument that marks a hook command as one install wrote:
// install, uninstall and status only ever touch a handler whose command is
// exactly Command(prog, source) for some program, never a user's own
// command however similar ("~/bin/log.sh hook claude-code",
// "agentbridge hook claude-code" typed by hand). `agentbridge hook`
// accepts and ignores it.
const Mark = "--by=hooks-install"

// Command is the hook command line for a source run by the program at
// prog: "'/opt/my tools/agentbridge' hook --by=hooks-install claude-code",
// quoted for sh.
func Command(prog, source string) string {
	return shellQuote(prog) + " hook " + Mark + " " + source
}

// AnswerCommand is the PermissionRequest hook command that waits up to
// wait seconds for an answer given through the bridge: "… hook
// --by=hooks-install --answer=300 claude-code".
func AnswerCommand(prog, source string, wait int) string {
	return shellQuote(prog) + " hook " + Mark + " --answer=" + strconv.Itoa(wait) + " " + source
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+@:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ours reports whether a hook command is exactly one install writes for
// source (Command of some program), and returns the program it runs.
func ours(cmd, source string) (prog string, ok bool) {
	prog, _, ok = oursAnswer(cmd, source)
	return prog, ok
}

// oursAnswer is ours that also returns the wait of an AnswerCommand (0
// for a Command).
func oursAnswer(cmd, source string) (prog string, wait int, ok bool) {
	rest, found := strings.CutSuffix(cmd, " "+source)
	if !found {
		return "", 0, false
	}
	if i := strings.LastIndex(rest, " --answer="); i >= 0 && strings.HasSuffix(rest[:i], " hook "+Mark) {
		n, err := strconv.Atoi(rest[i+len(" --answer="):])
		if err != nil || n <= 0 || strconv.Itoa(n) != rest[i+len(" --answer="):] {
			return "", 0, false
		}
		wait, rest = n, rest[:i]
	}
	rest, found = strings.CutSuffix(rest, " hook "+Mark)
	if !found || rest == "" {
		return "", 0, false
	}
	p, ok := unquote(rest)
	return p, wait, ok
}

// unquote undoes shellQuote.
func unquote(rest string) (prog string, ok bool) {
	prog = rest
	if rest[0] == '\'' {
		if len(rest) < 2 || rest[len(rest)-1] != '\'' {
			return "", false
		}
		prog = strings.ReplaceAll(rest[1:len(rest)-1], `'\''`, "'")
	}
	if shellQuote(prog) != rest {
		return "", false
	}
	return prog, true
}

// Edit is one planned change of one file: what it holds and what it will
// hold.
type Edit struct {
	File    string // the file (a symlink resolved)
	Harness string
	Existed bool
	Before  []byte
	After   []byte // nil with Remove
	Remove  bool   // uninstall removes the file (install created it; nothing else is left)

	mode      os.FileMode
	uninstall bool
}

// Changes reports whether applying e changes the file.
func (e Edit) Changes() bool {
	if e.Remove {
		return e.Existed
	}
	return !bytes.Equal(e.Before, e.After) || !e.Existed && len(e.After) > 0
}

// Diff is the unified diff of the change, with the file's path as its
// name ("" when nothing changes).
func (e Edit) Diff() string {
	if !e.Changes() {
		return ""
	}
	before, after := e.File, e.File
	if !e.Existed {
		before = "/dev/null"
	}
	if e.Remove {
		after = "/dev/null"
	}
	return udiff.Unified(before, after, string(e.Before), string(e.After))
}

// Change is what applying an edit did to one file.
type Change struct {
	File    string
	Changed bool
	Backup  string // the backup made now ("" when none was needed)
	Removed bool   // the file was removed (uninstall of a file install created)
}

// PlanInstall plans adding the hook command (Command) for every event the
// bridge takes from the harness, and for Codex turning its hooks feature
// on. It reads and checks every file but writes none; an error means the
// harness cannot be installed as its files are (nothing should be written).
// Installing without answering over an answering install makes the
// PermissionRequest hook plain again.
func PlanInstall(t Target, command string) ([]Edit, error) {
	return PlanInstallAnswer(t, command, 0)
}

// PlanInstallAnswer is PlanInstall whose PermissionRequest hook waits up
// to wait seconds for an answer given through the bridge (AnswerCommand of
// the same program, its handler's timeout wait plus a margin); wait 0 is
// PlanInstall. A harness that cannot be answered (Answerable) is refused.
func PlanInstallAnswer(t Target, command string, wait int) ([]Edit, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	source := t.source()
	prog, ok := ours(command, source)
	if !ok || command != Command(prog, source) {
		return nil, fmt.Errorf("%q is not a hook command install writes (Command)", command)
	}
	if _, can := Answerable(t.Harness); wait > 0 && !can {
		return nil, fmt.Errorf("%s: its permission prompts cannot be answered through the bridge", t.Harness)
	}
	if wait < 0 || time.Duration(wait)*time.Second > maxAnswerWait {
		return nil, fmt.Errorf("the answer wait must be between 1 and %d seconds", int(maxAnswerWait/time.Second))
	}
	events := hooks.Events(source)
	sp := specs[t.Harness]
	handlerFor := func(ev string) handler {
		if wait > 0 && ev == answerEvent {
			return handler{Type: "command", Command: AnswerCommand(prog, source, wait), Timeout: wait + answerMargin}
		}
		return handler{Type: "command", Command: command, Timeout: sp.timeout}
	}
	e, err := planJSON(t, false, func(d *doc) error {
		return addHandlers(d, source, events, handlerFor)
	})
	if err != nil {
		return nil, err
	}
	plan := []Edit{e}
	if cf := t.ConfigFile(); cf != "" {
		e, err := planText(t, cf, false, enableFeature)
		if err != nil {
			return nil, err
		}
		plan = append(plan, e)
	}
	return plan, nil
}

// answerEvent is the hook that may wait for an answer.
const answerEvent = "PermissionRequest"

// maxAnswerWait bounds an answering hook's wait (the bridge's own bound).
const maxAnswerWait = 10 * time.Minute

// PlanUninstall plans removing what install added, as PlanInstall does.
func PlanUninstall(t Target) ([]Edit, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	e, err := planJSON(t, true, func(d *doc) error { removeHandlers(d, t.source()); return nil })
	if err != nil {
		return nil, err
	}
	plan := []Edit{e}
	if cf := t.ConfigFile(); cf != "" {
		e, err := planText(t, cf, true, disableFeature)
		if err != nil {
			return nil, err
		}
		plan = append(plan, e)
	}
	return plan, nil
}

// Install plans and applies an install for one harness.
func Install(t Target, command string) ([]Change, error) {
	plan, err := PlanInstall(t, command)
	if err != nil {
		return nil, err
	}
	return Apply(plan)
}

// Uninstall plans and applies an uninstall for one harness.
func Uninstall(t Target) ([]Change, error) {
	plan, err := PlanUninstall(t)
	if err != nil {
		return nil, err
	}
	return Apply(plan)
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
	// Foreign counts the hook commands that run agentbridge's hook but
	// were not written by install (typed by hand, or by an install before
	// the mark): install and uninstall leave them alone.
	Foreign int `json:"foreign,omitempty"`
	// Broken says, per program the installed commands run, why it cannot
	// be run (gone, not executable): the hooks do nothing until install
	// writes a program that is there.
	Broken map[string]string `json:"broken,omitempty"`
	// Answer is how many seconds the PermissionRequest hook waits for an
	// answer given through the bridge (install --answer); 0: it waits for
	// none.
	Answer int `json:"answer,omitempty"`
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
	d, err := parseDoc(b, specs[t.Harness].dialect)
	if err != nil {
		st.Problem = fmt.Sprintf("%s: %v", filepath.Base(st.File), err)
		return st
	}
	found := map[string]bool{}
	forHandlers(d, func(ev string, _ *hujson.Array, _ int, h *hujson.Object) {
		cmd := asString(member(h, "command"))
		if p, wait, ok := oursAnswer(cmd, t.source()); ok {
			found[ev] = true
			if ev == answerEvent {
				st.Answer = wait
			}
			if !slices.Contains(st.Programs, p) {
				st.Programs = append(st.Programs, p)
			}
		} else if strings.Contains(cmd, "agentbridge") && strings.Contains(cmd, " hook ") {
			st.Foreign++
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
	for _, p := range st.Programs {
		if err := binpath.Check(p); err != nil {
			if st.Broken == nil {
				st.Broken = map[string]string{}
			}
			st.Broken[p] = err.Error()
		}
	}
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

// forHandlers calls fn for every handler object of every event of a
// hooks document ({"hooks": {"Event": [{"matcher"?, "hooks": [handler…]}]}}),
// with the handler list it is in and its index there.
func forHandlers(d *doc, fn func(event string, list *hujson.Array, i int, handler *hujson.Object)) {
	hs := asObject(member(d.obj(), "hooks"))
	if hs == nil {
		return
	}
	for _, m := range hs.Members {
		groups := asArray(&m.Value)
		if groups == nil {
			continue
		}
		ev := asString(&m.Name)
		for gi := range groups.Elements {
			list := asArray(member(asObject(&groups.Elements[gi]), "hooks"))
			if list == nil {
				continue
			}
			for i := range list.Elements {
				if h := asObject(&list.Elements[i]); h != nil {
					fn(ev, list, i, h)
				}
			}
		}
	}
}

// handler is the handler install adds.
type handler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

type group struct {
	Hooks []handler `json:"hooks"`
}

// plainHandler is the handler of every event without answering.
func plainHandler(command string, timeout int) func(string) handler {
	return func(string) handler { return handler{Type: "command", Command: command, Timeout: timeout} }
}

// addHandlers makes sure every event has one handler, the one handlerFor
// gives:
// an existing one of ours gets the command (another binary path) and the
// timeout (an older install wrote another), else a group with one handler
// is appended. A user's own handlers are never touched.
func addHandlers(d *doc, source string, events []string, handlerFor func(event string) handler) error {
	root := d.rootLayout()
	hv := member(d.obj(), "hooks")
	if hv == nil {
		hv = addMember(d.obj(), root, layout{}, "hooks", map[string]any{})
	}
	hs := asObject(hv)
	if hs == nil {
		return errors.New(`"hooks" is not an object`)
	}
	hl := d.objLayout(hs, root)
	for _, ev := range events {
		want := handlerFor(ev)
		command, timeout := want.Command, want.Timeout
		gv := member(hs, ev)
		if gv == nil {
			addMember(hs, hl, root, ev, []group{{Hooks: []handler{want}}})
			continue
		}
		groups := asArray(gv)
		if groups == nil {
			return fmt.Errorf("hooks.%s is not a list", ev)
		}
		have := false
		for gi := range groups.Elements {
			list := asArray(member(asObject(&groups.Elements[gi]), "hooks"))
			if list == nil {
				continue
			}
			for i := range list.Elements {
				h := asObject(&list.Elements[i])
				c := member(h, "command")
				if _, ok := ours(asString(c), source); !ok || have {
					continue
				}
				have = true
				if asString(c) != command {
					setLiteral(c, command)
				}
				if tv := member(h, "timeout"); tv == nil {
					addMember(h, d.objLayout(h, hl), hl, "timeout", timeout)
				} else if lit, ok := tv.Value.(hujson.Literal); !ok || lit.Kind() != '0' || lit.Int() != int64(timeout) {
					setLiteral(tv, timeout)
				}
			}
		}
		if !have {
			addElement(groups, d.arrLayout(groups, hl), hl, group{Hooks: []handler{want}})
		}
	}
	return nil
}

// removeHandlers removes every handler of ours, the groups it leaves
// without handlers, the event lists it leaves empty and the hooks object
// when nothing is left in it.
func removeHandlers(d *doc, source string) {
	hs := asObject(member(d.obj(), "hooks"))
	if hs == nil {
		return
	}
	removed := false
	for mi := len(hs.Members) - 1; mi >= 0; mi-- {
		groups := asArray(&hs.Members[mi].Value)
		if groups == nil {
			continue
		}
		touched := false
		for gi := len(groups.Elements) - 1; gi >= 0; gi-- {
			list := asArray(member(asObject(&groups.Elements[gi]), "hooks"))
			if list == nil {
				continue
			}
			n := len(list.Elements)
			for i := n - 1; i >= 0; i-- {
				if _, ok := ours(asString(member(asObject(&list.Elements[i]), "command")), source); ok {
					removeElement(list, i)
				}
			}
			if len(list.Elements) < n {
				touched = true
				if len(list.Elements) == 0 {
					removeElement(groups, gi)
				}
			}
		}
		if touched {
			removed = true
			if len(groups.Elements) == 0 {
				removeMember(hs, mi)
			}
		}
	}
	if removed && len(hs.Members) == 0 {
		o := d.obj()
		for i := range o.Members {
			if asString(&o.Members[i].Name) == "hooks" {
				removeMember(o, i)
				break
			}
		}
	}
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

func planFile(t Target, path string, uninstall bool) (Edit, error) {
	path = resolve(path)
	e := Edit{File: path, Harness: t.Harness, mode: 0o600, uninstall: uninstall}
	b, err := readFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return e, err
	default:
		fi, err := os.Stat(path)
		if err != nil {
			return e, err
		}
		e.Existed, e.mode, e.Before = true, fi.Mode().Perm(), b
	}
	return e, nil
}

func planJSON(t Target, uninstall bool, change func(*doc) error) (Edit, error) {
	e, err := planFile(t, t.HooksFile(), uninstall)
	if err != nil {
		return e, err
	}
	dl := specs[t.Harness].dialect
	d, err := parseDoc(e.Before, dl)
	if err != nil {
		return e, fmt.Errorf("%s: %w (nothing was changed)", e.File, err)
	}
	if err := change(d); err != nil {
		return e, fmt.Errorf("%s: %w (nothing was changed)", e.File, err)
	}
	e.After = d.pack()
	if len(bytes.TrimSpace(e.Before)) == 0 && len(d.obj().Members) == 0 {
		e.After = e.Before // nothing to add to an empty file
	} else if len(bytes.TrimSpace(e.Before)) == 0 && len(e.After) > 0 && !bytes.HasSuffix(e.After, []byte("\n")) {
		e.After = append(e.After, '\n') // a new (or blank) file ends with a line break
	}
	// what is written must read back, as the agent reads it
	if _, err := parseDoc(e.After, dl); err != nil {
		return e, fmt.Errorf("%s: the edit would not read back (%v); nothing was changed", e.File, err)
	}
	e.finish()
	return e, nil
}

func planText(t Target, path string, uninstall bool, change func(string) (string, error)) (Edit, error) {
	e, err := planFile(t, path, uninstall)
	if err != nil {
		return e, err
	}
	after, err := change(string(e.Before))
	if err != nil {
		return e, fmt.Errorf("%s: %w (nothing was changed)", e.File, err)
	}
	e.After = []byte(after)
	e.finish()
	return e, nil
}

// finish marks an uninstall that leaves nothing in a file install created
// (it has no backup) as the file's removal.
func (e *Edit) finish() {
	if !e.uninstall || !e.Existed || bytes.Equal(e.Before, e.After) {
		return
	}
	if _, err := os.Stat(e.File + BackupSuffix); err == nil || !isEmpty(e.After) {
		return
	}
	e.Remove, e.After = true, nil
}

// Apply writes planned edits, all or none: first it checks that every file
// that changes can be written, so that a read-only file changes nothing at
// all; a write that fails after others succeeded puts those back. Before
// its first change to a file that existed, install copies it to
// <file>.agentbridge-backup (never overwritten).
func Apply(plan []Edit) ([]Change, error) {
	var todo []Edit
	for _, e := range plan {
		if e.Changes() {
			todo = append(todo, e)
		}
	}
	for _, e := range todo {
		if e.Existed {
			// a file without its owner's write bit is read-only on
			// purpose, also for root (whom access(2) lets write it)
			if e.mode&0o200 == 0 {
				return nil, fmt.Errorf("%s is read-only; nothing was changed", e.File)
			}
			if err := writable(e.File); err != nil {
				return nil, fmt.Errorf("%s cannot be written (%w); nothing was changed", e.File, err)
			}
		}
		dir := filepath.Dir(e.File)
		if _, err := os.Stat(dir); err == nil {
			if err := writable(dir); err != nil {
				return nil, fmt.Errorf("%s cannot be written (%w); nothing was changed", dir, err)
			}
		}
	}
	var out []Change
	var done []Edit
	undo := func(err error) ([]Change, error) {
		for _, e := range slices.Backward(done) {
			if e.Existed {
				_ = writeFile(e.File, e.Before, e.mode)
			} else {
				_ = os.Remove(e.File)
			}
		}
		return nil, fmt.Errorf("%w; the files changed before were put back", err)
	}
	for _, e := range todo {
		c := Change{File: e.File, Changed: true}
		if e.Remove {
			if err := os.Remove(e.File); err != nil && !errors.Is(err, os.ErrNotExist) {
				return undo(err)
			}
			c.Removed = true
			out, done = append(out, c), append(done, e)
			continue
		}
		backup := e.File + BackupSuffix
		if _, err := os.Lstat(backup); errors.Is(err, os.ErrNotExist) && e.Existed && !e.uninstall {
			if err := writeFile(backup, e.Before, e.mode); err != nil {
				return undo(fmt.Errorf("back up %s: %w", e.File, err))
			}
			c.Backup = backup
		}
		if err := os.MkdirAll(filepath.Dir(e.File), 0o700); err != nil {
			return undo(err)
		}
		if err := writeFile(e.File, e.After, e.mode); err != nil {
			return undo(fmt.Errorf("write %s: %w", e.File, err))
		}
		out, done = append(out, c), append(done, e)
	}
	return out, nil
}

func isEmpty(b []byte) bool {
	s := strings.TrimSpace(string(b))
	return s == "" || s == "{}"
}
