// Package install adds the bridge's hook command to an agent's own
// settings, removes it again, and says what is installed: Claude Code's
// settings.json (under CLAUDE_CONFIG_DIR), Codex's hooks.json and the
// hooks feature flag of its config.toml (under CODEX_HOME), Gemini CLI's
// settings.json (under its .gemini directory), Qwen Code's settings.json
// (under QWEN_HOME, default ~/.qwen). What it knows of each agent (the
// harnesses with hooks, their events, file, timeout, whether the file
// takes comments or needs a feature flag, the answering hook's wait) is
// the sources.Hooks its source registers; the package holds no table per
// agent.
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
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"github.com/tailscale/hujson"

	"github.com/agentbridge/agentbridge/hooks"
	"github.com/agentbridge/agentbridge/internal/binpath"
	"github.com/agentbridge/agentbridge/sources"
)

// BackupSuffix is appended to a file's name for its backup.
const BackupSuffix = ".agentbridge-backup"

// Timeout is the hook timeout written for each handler, in seconds (the
// command itself ends within one second), unless the agent's
// sources.Hooks sets another (Codex); an agent that counts milliseconds
// (Gemini CLI) gets it in milliseconds.
const Timeout = 5

// answerMargin is added to an answering hook's wait for its handler's
// timeout: the agent must never kill the hook before it gives up itself.
const answerMargin = 5

// Answerable reports whether a harness's permission prompts can be
// answered through the bridge (install --answer), and its default wait
// (sources.Hooks.AnswerWait).
func Answerable(harness string) (wait int, ok bool) {
	w := specOf(harness).AnswerWait
	return w, w > 0
}

// maxSettings bounds a settings file that is read.
const maxSettings = 4 << 20

// Harnesses returns the harness ids that take hooks, sorted: those whose
// source registers a hook vocabulary (sources.Hooks).
func Harnesses() []string {
	var out []string
	for _, r := range sources.HookRegistrations() {
		out = append(out, r.Hooks.Harness)
	}
	slices.Sort(out)
	return out
}

// spec is what install knows of a harness's hooks: its source id (what
// `agentbridge hook` is given) and the hooks its source registers.
type spec struct {
	source string
	sources.Hooks
}

// specOf returns harness's spec (the zero spec for a harness without
// hooks).
func specOf(harness string) spec {
	r, ok := sources.HooksOfHarness(harness)
	if !ok {
		return spec{}
	}
	return spec{source: r.Info.ID, Hooks: *r.Hooks}
}

// timeout is the handler's timeout in the agent's unit.
func (sp spec) timeout() int {
	t := cmp.Or(sp.Timeout, Timeout)
	if sp.Millis {
		t *= 1000
	}
	return t
}

// dialect is what the agent reads back of its hooks file.
func (sp spec) dialect() dialect { return dialect{comments: sp.Comments} }

// Source is the source id of a harness with hooks ("" for none).
func Source(harness string) string { return specOf(harness).source }

// Target is one agent's home where hooks are installed.
type Target struct {
	Harness string // "claude-code" or "codex"
	Home    string // the agent's home directory (CLAUDE_CONFIG_DIR, CODEX_HOME)
}

// HooksFile is the JSON file that holds the agent's hooks.
func (t Target) HooksFile() string {
	if f := specOf(t.Harness).File; f != "" {
		return filepath.Join(t.Home, f)
	}
	return filepath.Join(t.Home, "settings.json")
}

func (t Target) source() string { return specOf(t.Harness).source }

// ConfigFile is Codex's config.toml ("" for other harnesses).
func (t Target) ConfigFile() string {
	if specOf(t.Harness).FeatureFlag {
		return filepath.Join(t.Home, "config.toml")
	}
	return ""
}

func (t Target) check() error {
	if hs := Harnesses(); !slices.Contains(hs, t.Harness) {
		return fmt.Errorf("no hooks for harness %q (harnesses with hooks: %s)", t.Harness, strings.Join(hs, ", "))
	}
	if !filepath.IsAbs(t.Home) {
		return fmt.Errorf("%s: the agent's home must be an absolute path", t.Harness)
	}
	return nil
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
	sp := specOf(t.Harness)
	handlerFor := func(ev string) handler {
		if wait > 0 && ev == answerEvent {
			return handler{Type: "command", Command: AnswerCommand(prog, source, wait), Timeout: wait + answerMargin}
		}
		return handler{Type: "command", Command: command, Timeout: sp.timeout()}
	}
	return planBoth(t, false, func(d *doc) error {
		return addHandlers(d, source, events, handlerFor)
	}, enableFeature)
}

// planBoth plans the edit of t's settings (planJSON) and, for a harness
// whose hooks are switched on in a config file too, the edit of that file
// (planText).
func planBoth(t Target, uninstall bool, settings func(*doc) error, config func(string) (string, error)) ([]Edit, error) {
	e, err := planJSON(t, uninstall, settings)
	if err != nil {
		return nil, err
	}
	plan := []Edit{e}
	if cf := t.ConfigFile(); cf != "" {
		e, err := planText(t, cf, uninstall, config)
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
	return planBoth(t, true, func(d *doc) error { removeHandlers(d, t.source()); return nil }, disableFeature)
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
	d, err := parseDoc(b, specOf(t.Harness).dialect())
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
