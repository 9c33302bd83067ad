package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentbridge/agentbridge/hooks"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/sources/codex"
)

const prog = "/opt/agent bridge/bin/agentbridge"

func copyFixture(t *testing.T, name, dst string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustInstall(t *testing.T, tg Target, cmd string) []Change {
	t.Helper()
	ch, err := Install(tg, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestClaudeCodeRoundTrip(t *testing.T) {
	home := t.TempDir()
	tg := Target{Harness: "claude-code", Home: home}
	file := tg.HooksFile()
	orig := copyFixture(t, "claude-settings.json", file)
	cmd := Command(prog, "claude-code")

	ch := mustInstall(t, tg, cmd)
	if len(ch) != 1 || ch[0].Backup != file+BackupSuffix {
		t.Fatalf("changes %+v, want one with a backup", ch)
	}
	if !bytes.Equal(read(t, file+BackupSuffix), orig) {
		t.Fatal("the backup is not the original")
	}
	once := read(t, file)
	var doc struct {
		Model string `json:"model"`
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type, Command string
				Timeout       int
			} `json:"hooks"`
		} `json:"hooks"`
		StatusLine map[string]any `json:"statusLine"`
	}
	if err := json.Unmarshal(once, &doc); err != nil {
		t.Fatalf("not JSON after install: %v\n%s", err, once)
	}
	if doc.Model != "opus" || doc.StatusLine["command"] != "~/.claude/statusline.sh" {
		t.Fatalf("other settings changed: %s", once)
	}
	for _, ev := range hooks.Events("claude-code") {
		groups := doc.Hooks[ev]
		last := groups[len(groups)-1].Hooks[0]
		if last.Command != cmd || last.Type != "command" || last.Timeout != Timeout {
			t.Errorf("%s: %+v", ev, groups)
		}
	}
	if got := doc.Hooks["PostToolUse"][0].Hooks[0].Command; !strings.HasPrefix(got, "prettier") {
		t.Errorf("the user's PostToolUse hook moved or changed: %q", got)
	}
	if !bytes.Contains(once, []byte(`caf\u00e9 needs you`)) || !bytes.Contains(once, []byte(`"cleanupPeriodDays": 30.0`)) {
		t.Error("the user's spelling of strings or numbers changed")
	}
	if !bytes.HasPrefix(once, orig[:bytes.Index(orig, []byte(`"hooks"`))]) {
		t.Error("the settings before hooks are not byte-identical")
	}

	if ch := mustInstall(t, tg, cmd); len(ch) != 0 || !bytes.Equal(read(t, file), once) {
		t.Fatalf("a second install changed the file: %+v", ch)
	}
	st := Status(tg, prog)
	if !st.Installed() || !st.Current || st.Problem != "" {
		t.Fatalf("status %+v", st)
	}

	// a moved binary: install points the same entries at the new one
	mustInstall(t, tg, Command("/usr/bin/agentbridge", "claude-code"))
	if st := Status(tg, prog); st.Current || !st.Installed() || !slices.Equal(st.Programs, []string{"/usr/bin/agentbridge"}) {
		t.Fatalf("after a move: %+v", st)
	}
	if n := bytes.Count(read(t, file), []byte(" hook "+Mark+" claude-code")); n != len(hooks.Events("claude-code")) {
		t.Fatalf("%d entries after a move, want one per event", n)
	}

	if _, err := Uninstall(tg); err != nil {
		t.Fatal(err)
	}
	if got := read(t, file); !bytes.Equal(got, orig) {
		t.Fatalf("uninstall did not give the original back:\n%s", got)
	}
	if st := Status(tg, prog); len(st.Events) != 0 {
		t.Fatalf("status after uninstall %+v", st)
	}
	if !bytes.Equal(read(t, file+BackupSuffix), orig) {
		t.Fatal("the backup changed")
	}
}

func TestMissingFiles(t *testing.T) {
	for _, harness := range Harnesses() {
		t.Run(harness, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "not-yet")
			tg := Target{Harness: harness, Home: home}
			mustInstall(t, tg, Command(prog, Source(harness)))
			if st := Status(tg, prog); !st.Installed() || !st.Current {
				t.Fatalf("status %+v", st)
			}
			if _, err := os.Stat(tg.HooksFile() + BackupSuffix); err == nil {
				t.Error("a backup of a file that did not exist")
			}
			if _, err := Uninstall(tg); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{tg.HooksFile(), tg.ConfigFile()} {
				if f == "" {
					continue
				}
				if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s is left after uninstall", filepath.Base(f))
				}
			}
		})
	}
}

func TestCodexRoundTrip(t *testing.T) {
	home := t.TempDir()
	tg := Target{Harness: "codex", Home: home}
	origHooks := copyFixture(t, "codex-hooks.json", tg.HooksFile())
	origConf := copyFixture(t, "codex-config.toml", tg.ConfigFile())
	if st := Status(tg, prog); st.Feature != "off" {
		t.Fatalf("feature %q", st.Feature)
	}
	mustInstall(t, tg, Command(prog, "codex"))
	conf := string(read(t, tg.ConfigFile()))
	for _, keep := range []string{"# Codex configuration — kept by hand\n", `model = "gpt-5.5-codex"   # the default model`, "# experimental things\nweb_search = true\n", `args = ["--read-only"]`} {
		if !strings.Contains(conf, keep) {
			t.Errorf("config.toml lost %q:\n%s", keep, conf)
		}
	}
	if !strings.Contains(conf, "hooks = true "+tomlTag+"\n") || !strings.Contains(conf, tomlWas+"hooks = false # turned off while debugging\n") {
		t.Fatalf("config.toml:\n%s", conf)
	}
	st := Status(tg, prog)
	if st.Feature != "on" || !st.Installed() {
		t.Fatalf("status %+v", st)
	}
	hooksOnce, confOnce := read(t, tg.HooksFile()), read(t, tg.ConfigFile())
	mustInstall(t, tg, Command(prog, "codex"))
	if !bytes.Equal(read(t, tg.HooksFile()), hooksOnce) || !bytes.Equal(read(t, tg.ConfigFile()), confOnce) {
		t.Fatal("a second install changed a file")
	}
	if !bytes.Contains(hooksOnce, []byte("log_stop.py")) {
		t.Fatal("the user's Stop hook is gone")
	}
	if _, err := Uninstall(tg); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, tg.HooksFile()), origHooks) || !bytes.Equal(read(t, tg.ConfigFile()), origConf) {
		t.Fatalf("uninstall did not restore:\n%s\n%s", read(t, tg.HooksFile()), read(t, tg.ConfigFile()))
	}
}

func TestTOMLEdits(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no features table", "model = \"x\"", "model = \"x\"\n[features] " + tomlTag + "\nhooks = true " + tomlTag + "\n"},
		{"on already", "[features]\nhooks = true\n", "[features]\nhooks = true\n"},
		{"the old name on", "[features]\ncodex_hooks = true\n", "[features]\ncodex_hooks = true\n"},
		{"table without the key", "[features]\nweb_search = true\n\n[other]\nx = 1\n", "[features]\nhooks = true " + tomlTag + "\nweb_search = true\n\n[other]\nx = 1\n"},
		{"the old name off", "[features]\ncodex_hooks = false\n", "[features]\n" + tomlWas + "codex_hooks = false\nhooks = true " + tomlTag + "\n"},
		{"a hooks table is not the feature", "[hooks]\nx = 1\n", "[hooks]\nx = 1\n[features] " + tomlTag + "\nhooks = true " + tomlTag + "\n"},
	}
	for _, tt := range tests {
		got, err := enableFeature(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v\nwant %q", tt.name, got, err, tt.want)
			continue
		}
		back, err := disableFeature(got)
		if err != nil {
			t.Errorf("%s: uninstall: %v", tt.name, err)
		}
		want := tt.in
		if tt.name == "no features table" {
			want += "\n" // the newline install had to add is kept
		}
		if back != want {
			t.Errorf("%s: uninstall gives %q, want %q", tt.name, back, want)
		}
	}
	for _, in := range []string{"features = { hooks = false }\n", "features.hooks = false\n"} {
		if _, err := enableFeature(in); !errors.Is(err, ErrTOMLForm) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestReadOnlyChangesNothing(t *testing.T) {
	home := t.TempDir()
	tg := Target{Harness: "codex", Home: home}
	origHooks := copyFixture(t, "codex-hooks.json", tg.HooksFile())
	copyFixture(t, "codex-config.toml", tg.ConfigFile())
	os.Chmod(tg.ConfigFile(), 0o444)
	if _, err := Install(tg, Command(prog, "codex")); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("install into a read-only config.toml: %v", err)
	}
	if !bytes.Equal(read(t, tg.HooksFile()), origHooks) {
		t.Fatal("hooks.json changed although config.toml could not be written")
	}
	if _, err := os.Stat(tg.HooksFile() + BackupSuffix); err == nil {
		t.Fatal("a backup was made of a change that did not happen")
	}
}

func TestRefusals(t *testing.T) {
	home := t.TempDir()
	tg := Target{Harness: "claude-code", Home: home}
	for _, bad := range []string{`[1]`, `{"hooks": [1]}`, `{"a":1} x`, `{"a":`} {
		os.WriteFile(tg.HooksFile(), []byte(bad), 0o644)
		if _, err := Install(tg, Command(prog, "claude-code")); err == nil {
			t.Errorf("%q: installed", bad)
		}
		if got := string(read(t, tg.HooksFile())); got != bad {
			t.Errorf("%q became %q", bad, got)
		}
	}
	os.Remove(tg.HooksFile())
	os.Mkdir(tg.HooksFile(), 0o755) // not a regular file
	if _, err := Install(tg, Command(prog, "claude-code")); err == nil {
		t.Error("installed into a directory")
	}
	if _, err := Install(Target{Harness: "pi", Home: home}, "x"); err == nil {
		t.Error("installed for a harness without hooks")
	}
	if _, err := Install(Target{Harness: "codex", Home: "relative"}, "x"); err == nil {
		t.Error("installed into a relative home")
	}
}

func TestOurs(t *testing.T) {
	tests := []struct {
		cmd  string
		prog string
		ok   bool
	}{
		{Command(prog, "codex"), prog, true},
		{Command("/usr/bin/agentbridge", "codex"), "/usr/bin/agentbridge", true},
		{Command("/home/o'brien/agentbridge", "codex"), "/home/o'brien/agentbridge", true},
		{"/usr/bin/agentbridge hook --by=hooks-install codex", "/usr/bin/agentbridge", true},
		// a user's own commands, however alike, are not ours
		{"/usr/bin/agentbridge hook codex", "", false},
		{"agentbridge hook codex", "", false},
		{Command(prog, "claude-code"), "", false},
		{"my-script hook --by=hooks-install codex", "my-script", true},
		{"sh -c 'x' hook --by=hooks-install codex", "", false},
		{"'/a b' '/c' hook --by=hooks-install codex", "", false},
		{"/a/agentbridge  hook --by=hooks-install codex", "", false},
		{" hook --by=hooks-install codex", "", false},
	}
	for _, tt := range tests {
		p, ok := ours(tt.cmd, "codex")
		if ok != tt.ok || p != tt.prog {
			t.Errorf("ours(%q) = %q %v", tt.cmd, p, ok)
		}
	}
}

func TestGeminiRoundTrip(t *testing.T) {
	home := t.TempDir()
	tg := Target{Harness: "gemini-cli", Home: home}
	orig := copyFixture(t, "gemini-settings.json", tg.HooksFile())
	mustInstall(t, tg, Command(prog, "gemini"))
	b := read(t, tg.HooksFile())
	var doc struct {
		Hooks map[string]json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, ev := range hooks.Events("gemini") {
		if !bytes.Contains(doc.Hooks[ev], []byte(`"timeout": 5000`)) || !bytes.Contains(doc.Hooks[ev], []byte(" hook "+Mark+" gemini")) {
			t.Errorf("%s: %s", ev, doc.Hooks[ev])
		}
	}
	if st := Status(tg, prog); !st.Installed() || !st.Current {
		t.Fatalf("status %+v", st)
	}
	if _, err := Uninstall(tg); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, tg.HooksFile()), orig) {
		t.Fatalf("uninstall:\n%s", read(t, tg.HooksFile()))
	}
}

func TestFIFOIsRefused(t *testing.T) {
	home := t.TempDir()
	tg := Target{Harness: "claude-code", Home: home}
	if err := unix.Mkfifo(tg.HooksFile(), 0o644); err != nil {
		testenv.Missing(t, "%v", err)
	}
	if _, err := Install(tg, Command(prog, "claude-code")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("install into a FIFO: %v", err)
	}
	if st := Status(tg, prog); st.Problem == "" {
		t.Fatalf("status of a FIFO: %+v", st)
	}
}

// Codex clamps the timeout of its SessionEnd and Interrupt hooks to 3 s
// and warns about it at every start (Codex 0.165 and 0.171, seen in the
// live suite): install writes 3 for every Codex handler, and installing
// again fixes the 5 an older install wrote, keeping the rest.
func TestCodexTimeout(t *testing.T) {
	home := t.TempDir()
	tg := Target{Harness: "codex", Home: home}
	mustInstall(t, tg, Command(prog, "codex"))
	var doc struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string
				Timeout int
			} `json:"hooks"`
		} `json:"hooks"`
	}
	decode := func() {
		t.Helper()
		if err := json.Unmarshal(read(t, tg.HooksFile()), &doc); err != nil {
			t.Fatal(err)
		}
	}
	decode()
	for _, ev := range hooks.Events("codex") {
		if h := doc.Hooks[ev][0].Hooks[0]; h.Timeout != codex.HookTimeout {
			t.Errorf("%s: timeout %d, want %d", ev, h.Timeout, codex.HookTimeout)
		}
	}
	old := strings.ReplaceAll(string(read(t, tg.HooksFile())), `"timeout": 3`, `"timeout": 5`)
	if err := os.WriteFile(tg.HooksFile(), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if ch := mustInstall(t, tg, Command(prog, "codex")); len(ch) != 1 {
		t.Fatalf("changes %+v, want the hooks file", ch)
	}
	decode()
	for _, ev := range hooks.Events("codex") {
		if hs := doc.Hooks[ev]; len(hs) != 1 || hs[0].Hooks[0].Timeout != codex.HookTimeout {
			t.Errorf("%s: %+v", ev, hs)
		}
	}
	once := read(t, tg.HooksFile())
	if ch := mustInstall(t, tg, Command(prog, "codex")); len(ch) != 0 || !bytes.Equal(read(t, tg.HooksFile()), once) {
		t.Fatalf("a second install changed the file: %+v", ch)
	}
}
