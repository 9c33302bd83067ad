package install

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// attackFile copies testdata/attacks/name to dst.
func attackFile(t *testing.T, name, dst string) []byte {
	t.Helper()
	return copyFixture(t, filepath.Join("attacks", name), dst)
}

// codexConfig decodes config.toml as Codex would load it.
func codexConfig(t *testing.T, b []byte) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := toml.Unmarshal(bytes.TrimPrefix(b, utf8BOM), &m); err != nil {
		t.Fatalf("config.toml does not load: %v\n%s", err, b)
	}
	return m
}

// Codex config.toml files that install broke (a key or table twice) or
// edited in the wrong place (inside a string): after install each loads,
// with the hooks feature on and every other setting as it was; uninstall
// gives the bytes back.
func TestCodexConfigAttacks(t *testing.T) {
	tests := []struct {
		file  string
		check func(t *testing.T, m map[string]any)
	}{
		{"codex-quoted-key.toml", func(t *testing.T, m map[string]any) {
			if m["features"].(map[string]any)["web_search"] != true {
				t.Error("web_search lost")
			}
		}},
		{"codex-quoted-header.toml", func(t *testing.T, m map[string]any) {
			if m["mcp_servers"].(map[string]any)["docs"].(map[string]any)["command"] != "docs-mcp" {
				t.Error("mcp server lost")
			}
		}},
		{"codex-bom.toml", nil},
		{"codex-multiline-string.toml", func(t *testing.T, m map[string]any) {
			if got := m["developer_instructions"]; got != "Keep these notes:\n[features]\nare described in the docs.\n" {
				t.Errorf("the user's string changed: %q", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tg := Target{Harness: "codex", Home: t.TempDir()}
			orig := attackFile(t, tt.file, tg.ConfigFile())
			before := codexConfig(t, orig)
			mustInstall(t, tg, Command(prog, "codex"))
			got := read(t, tg.ConfigFile())
			m := codexConfig(t, got)
			f, _ := m["features"].(map[string]any)
			if f["hooks"] != true {
				t.Fatalf("features.hooks is %v:\n%s", f["hooks"], got)
			}
			if bytes.HasPrefix(orig, utf8BOM) != bytes.HasPrefix(got, utf8BOM) {
				t.Error("the byte order mark was dropped or added")
			}
			for k, v := range before {
				if k != "features" && !equalTOML(m[k], v) {
					t.Errorf("%s changed: %v → %v", k, v, m[k])
				}
			}
			if tt.check != nil {
				tt.check(t, m)
			}
			if st := Status(tg, prog); st.Feature != "on" {
				t.Errorf("status feature %q", st.Feature)
			}
			if _, err := Uninstall(tg); err != nil {
				t.Fatal(err)
			}
			if back := read(t, tg.ConfigFile()); !bytes.Equal(back, orig) {
				t.Fatalf("uninstall:\n%q\nwant\n%q", back, orig)
			}
		})
	}
}

func equalTOML(a, b any) bool {
	x, _ := toml.Marshal(map[string]any{"v": a})
	y, _ := toml.Marshal(map[string]any{"v": b})
	return bytes.Equal(x, y)
}

// Files the agent reads differently from an edit, or not at all, are
// refused with the reason and left as they were; status says so.
func TestAmbiguousFilesAreRefused(t *testing.T) {
	tests := []struct {
		harness, file, content, want string
	}{
		{"claude-code", "claude-duplicate-hooks.json", "", "twice"},
		{"claude-code", "claude-bom.json", "", "byte order mark"},
		{"claude-code", "", "{\"a\": 1, // c\n}", "comment"},
		{"gemini-cli", "", `{"a": [1,],}`, "trailing comma"},
		{"claude-code", "", `{"a": ` + strings.Repeat("[", 4<<20-16), "deeper than"},
		{"gemini-cli", "", `{"a": "[[", /* [[[ */ "b": ` + strings.Repeat("[{\"c\":", 300), "deeper than"},
		{"gemini-cli", "", "{\"a\": 1, \"\\u0061\": 2}", "twice"},
		{"qwen-code", "", "\xff\xfe{\x00}\x00", "UTF-16"},
		{"codex", "", "[features]\nhooks = false\nhooks = true\n", "not valid TOML"},
		{"codex", "", "[features]\nweb_search = true\n[features]\nx = 1\n", "not valid TOML"},
		{"codex", "", "\xfe\xff\x00[", "UTF-16"},
		{"codex", "", "[features]\nhooks = \"yes\"\n", "not true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.harness+"/"+tt.file+tt.want, func(t *testing.T) {
			tg := Target{Harness: tt.harness, Home: t.TempDir()}
			path := tg.HooksFile()
			if tt.harness == "codex" {
				path = tg.ConfigFile()
			}
			var orig []byte
			if tt.file != "" {
				orig = attackFile(t, tt.file, path)
			} else {
				orig = []byte(tt.content)
				if err := os.WriteFile(path, orig, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Install(tg, Command(prog, Source(tt.harness)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("install: %v, want an error naming %q", err, tt.want)
			}
			if got := read(t, path); !bytes.Equal(got, orig) {
				t.Fatalf("the refused file changed:\n%q", got)
			}
			if _, err := os.Stat(tg.HooksFile()); tt.harness == "codex" && err == nil {
				t.Error("hooks.json was written although config.toml was refused")
			}
			st := Status(tg, prog)
			if tt.harness == "codex" {
				if !strings.HasPrefix(st.Feature, "unknown") {
					t.Errorf("status feature %q", st.Feature)
				}
			} else if st.Problem == "" || st.Installed() {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// What is the user's stays as it was, byte for byte: their own hook
// commands that end like the bridge's ("… hook claude-code") are neither
// rewritten by install nor removed by uninstall; Gemini CLI's comments are
// kept (it reads them); a compact member is not reflowed, only the hooks
// member is new. Uninstall gives the file back.
func TestSettingsKeepWhatIsTheUsers(t *testing.T) {
	tests := []struct {
		name, harness, file string
		keep                []string
		foreign             int
	}{
		{"user hooks alike ours", "claude-code", "claude-user-hook.json", []string{
			"\"matcher\": \"Bash\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"/home/u/bin/agentbridge-audit hook claude-code\",\n            \"timeout\": 30",
			"\"command\": \"agentbridge hook claude-code\",\n            \"timeout\": 30",
		}, 2},
		{"commented Gemini settings", "gemini-cli", "gemini-commented.json", []string{
			"// my Gemini settings\n", "/* I like vim */", "// scan writes for secrets\n",
		}, 0},
		{"compact JSON", "claude-code", "claude-compact.json", []string{
			`  "model": "opus",`,
			`  "permissions": {"allow": ["Bash(ls)", "Read"], "deny": ["Bash(rm -rf *)"]},`,
			`  "env": {"A": "1", "B": "2"},`,
			"\n  \"hooks\": {\n    \"Notification\": [\n      {\n        \"hooks\": [\n",
		}, 0},
		{"CRLF line breaks", "claude-code", "claude-crlf.json", []string{
			"  \"hooks\": {\r\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}, {\"hooks\": [{\"type\": \"command\", \"command\": \"'/opt/agent bridge/bin/agentbridge' hook --by=hooks-install claude-code\", \"timeout\": 5}]}],\r\n",
			"],\r\n    \"Notification\": [\r\n      {\r\n        \"hooks\": [\r\n",
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := Target{Harness: tt.harness, Home: t.TempDir()}
			orig := attackFile(t, tt.file, tg.HooksFile())
			mustInstall(t, tg, Command(prog, Source(tt.harness)))
			got := read(t, tg.HooksFile())
			for _, keep := range tt.keep {
				if !bytes.Contains(got, []byte(keep)) {
					t.Errorf("want %q kept in:\n%q", keep, got)
				}
			}
			if crlf := bytes.Contains(orig, []byte("\r\n")); crlf && bytes.Count(got, []byte("\n")) != bytes.Count(got, []byte("\r\n")) {
				t.Errorf("a bare line break added to a CRLF file:\n%q", got)
			}
			if st := Status(tg, prog); !st.Installed() || st.Problem != "" || st.Foreign != tt.foreign {
				t.Fatalf("status %+v", st)
			}
			if _, err := Uninstall(tg); err != nil {
				t.Fatal(err)
			}
			if back := read(t, tg.HooksFile()); !bytes.Equal(back, orig) {
				t.Fatalf("uninstall:\n%s", back)
			}
		})
	}
}

// A file on one line stays on one line.
func TestOneLineJSONStaysOnOneLine(t *testing.T) {
	for _, tt := range []struct{ in, prefix string }{
		{`{"model":"opus"}`, `{"model":"opus","hooks":{"Notification":[{"hooks":[{"type":"command","command":"`},
		{`{"model": "opus", "env": {"A": "1"}}`, `{"model": "opus", "env": {"A": "1"}, "hooks": {"Notification": [{"hooks": [{"type": "command", "command": "`},
	} {
		tg := Target{Harness: "claude-code", Home: t.TempDir()}
		os.WriteFile(tg.HooksFile(), []byte(tt.in), 0o644)
		mustInstall(t, tg, Command(prog, "claude-code"))
		if got := read(t, tg.HooksFile()); bytes.Count(got, []byte("\n")) != 0 || !bytes.HasPrefix(got, []byte(tt.prefix)) {
			t.Errorf("a one-line file became:\n%s\nwant it to start %s", got, tt.prefix)
		}
		if _, err := Uninstall(tg); err != nil {
			t.Fatal(err)
		}
		if got := read(t, tg.HooksFile()); string(got) != tt.in {
			t.Errorf("uninstall: %s", got)
		}
	}
}

// --dry-run's diff names the file and shows the added lines.
func TestDiff(t *testing.T) {
	tg := Target{Harness: "codex", Home: t.TempDir()}
	attackFile(t, "codex-quoted-header.toml", tg.ConfigFile())
	plan, err := PlanInstall(tg, Command(prog, "codex"))
	if err != nil {
		t.Fatal(err)
	}
	var diff string
	for _, e := range plan {
		diff += e.Diff()
	}
	for _, want := range []string{"--- /dev/null\n+++ " + tg.HooksFile(), "+++ " + tg.ConfigFile(), "+hooks = true " + tomlTag} {
		if !strings.Contains(diff, want) {
			t.Errorf("want %q in the diff:\n%s", want, diff)
		}
	}
	if _, err := os.Stat(tg.HooksFile()); err == nil {
		t.Error("planning wrote a file")
	}
}
