package all_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/internal/terminaymanifest"
	"github.com/agentbridge/agentbridge/sources"
	_ "github.com/agentbridge/agentbridge/sources/all"
)

// The homes the bridge follows when nothing is configured: each agent's
// own variable when it is absolute, else its default under HOME; the
// example agent only when its variable names a home.
func TestHomesFromTheAgentsOwnVariables(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		name string
		env  []string
		want map[string]string
	}{
		{"defaults", nil, map[string]string{
			"claude-code": filepath.Join(home, ".claude"),
			"codex":       filepath.Join(home, ".codex"),
			"example":     "",
		}},
		{"agents' variables", []string{"CLAUDE_CONFIG_DIR=/srv/claude", "CODEX_HOME=/srv/codex", "EXAMPLE_AGENT_HOME=/srv/example"}, map[string]string{
			"claude-code": "/srv/claude",
			"codex":       "/srv/codex",
			"example":     "/srv/example",
		}},
		{"relative variables are not honoured", []string{"CLAUDE_CONFIG_DIR=rel/claude", "EXAMPLE_AGENT_HOME=rel"}, map[string]string{
			"claude-code": filepath.Join(home, ".claude"),
			"example":     "",
		}},
		{"configuration wins", []string{"CODEX_HOME=/srv/codex", "AGENTBRIDGE_SOURCES_CODEX_HOME=/srv/mine"}, map[string]string{
			"codex": "/srv/mine",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "none")}, tc.env...)
			c, err := config.Load(nil, env)
			if err != nil {
				t.Fatal(err)
			}
			for id, want := range tc.want {
				r, ok := sources.Lookup(id)
				if !ok {
					t.Fatalf("source %s is not registered", id)
				}
				if got := r.ResolveHome(c.SourceHome(id), c.Getenv); got != want {
					t.Errorf("%s home = %q, want %q", id, got, want)
				}
			}
		})
	}
}

// No HOME: a source with a default home under it has none.
func TestNoHome(t *testing.T) {
	r, _ := sources.Lookup("codex")
	if got := r.ResolveHome("", func(string) string { return "" }); got != "" {
		t.Errorf("home without HOME = %q", got)
	}
}

// Every registered source is declared in the Terminay extension's
// manifest (its harnesses and the variables it reads), and the manifest
// declares nothing the registry does not know, so a new agent shows up in
// Terminay with its own switch.
func TestTerminayManifestMatchesRegistry(t *testing.T) {
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	// Terminay reads the manifest from the "terminay" key of package.json.
	var pkg struct {
		Terminay struct {
			Contributes struct {
				AgentSessionSources []struct {
					Harnesses []struct {
						ID          string `json:"id"`
						DisplayName string `json:"displayName"`
					} `json:"harnesses"`
					EnvironmentVariables []string `json:"environmentVariables"`
				} `json:"agentSessionSources"`
			} `json:"contributes"`
		} `json:"terminay"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	if len(pkg.Terminay.Contributes.AgentSessionSources) != 1 {
		t.Fatalf("manifest declares %d sources, want 1", len(pkg.Terminay.Contributes.AgentSessionSources))
	}
	decl := pkg.Terminay.Contributes.AgentSessionSources[0]
	declared := map[string]string{}
	for _, h := range decl.Harnesses {
		declared[h.ID] = h.DisplayName
	}
	registered := map[string]bool{}
	for _, r := range sources.Registered() {
		for _, h := range r.Info.Harnesses {
			registered[h.ID] = true
			if name, ok := declared[h.ID]; !ok {
				t.Errorf("harness %s of source %s is missing from the manifest: %s", h.ID, r.Info.ID, stale)
			} else if name != h.DisplayName {
				t.Errorf("harness %s: manifest says %q, the source %q: %s", h.ID, name, h.DisplayName, stale)
			}
		}
		for _, v := range r.Info.EnvironmentVariables {
			if !slices.Contains(decl.EnvironmentVariables, v) {
				t.Errorf("variable %s of source %s is missing from the manifest: %s", v, r.Info.ID, stale)
			}
		}
	}
	for id := range declared {
		if !registered[id] {
			t.Errorf("the manifest declares harness %s, which no source registers: %s", id, stale)
		}
	}
}

// The Terminay extension's manifest, written by make manifest.
var manifestPath = filepath.Join("..", "..", "extensions", "terminay", "package.json")

// stale is what a failure says to do about a manifest out of step.
const stale = "extensions/terminay/package.json is stale: run make manifest"

// The committed manifest is what the generator writes from the registry,
// so a source added or changed without make manifest fails here.
func TestTerminayManifestIsGenerated(t *testing.T) {
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	got, err := terminaymanifest.Rewrite(data, sources.Registered())
	if err != nil {
		t.Fatal(err)
	}
	want, have := strings.Split(string(got), "\n"), strings.Split(string(data), "\n")
	for i := range max(len(want), len(have)) {
		if i >= len(want) || i >= len(have) || want[i] != have[i] {
			t.Errorf("%s (from line %d)", stale, i+1)
			break
		}
	}
}

// The generator rewrites only the two arrays: a manifest with other keys
// (some named like the generated ones), its own order and indentation
// keeps every other byte, and the file is replaced with its mode.
func TestTerminayManifestGeneratorKeepsTheRest(t *testing.T) {
	parts := []string{
		"{\n\t\"z\": {\"harnesses\": [1, 2]},\n\t\"terminay\": {\n\t\t\"contributes\": {\n\t\t\t\"agentSessionSources\": [\n\t\t\t\t{\n\t\t\t\t\t\"environmentVariables\": ",
		"[\"OLD\"]",
		",\n\t\t\t\t\t\"extra\": {\"harnesses\": []},\n\t\t\t\t\t\"harnesses\": ",
		"[ {\"id\": \"gone\", \"displayName\": \"Gone\"} ]",
		",\n\t\t\t\t\t\"id\": \"x/y\"\n\t\t\t\t},\n\t\t\t\t{\"harnesses\": [\"second\"]}\n\t\t\t]\n\t\t},\n\t\t\"after\": \"<&>\"\n\t}\n}\n",
	}
	path := filepath.Join(t.TempDir(), "package.json")
	if err := os.WriteFile(path, []byte(strings.Join(parts, "")), 0o640); err != nil {
		t.Fatal(err)
	}
	changed, err := terminaymanifest.WriteFile(path, sources.Registered())
	if err != nil {
		t.Fatal(err)
	}
	if !changed {
		t.Error("a stale manifest was reported unchanged")
	}
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after writing: %v, %v", fi.Mode(), err)
	}
	// Every byte outside the arrays is where it was.
	rest := string(out)
	for i, p := range parts {
		if i%2 == 1 {
			continue
		}
		at := strings.Index(rest, p)
		if at < 0 {
			t.Fatalf("part %d of the manifest changed:\n%s", i, out)
		}
		if i == 0 && at != 0 || i == len(parts)-1 && at+len(p) != len(rest) {
			t.Fatalf("part %d of the manifest moved:\n%s", i, out)
		}
		rest = rest[at+len(p):]
	}
	// The arrays say what the registry does, indented like the file.
	var doc struct {
		Terminay struct {
			Contributes struct {
				AgentSessionSources []json.RawMessage `json:"agentSessionSources"`
			} `json:"contributes"`
		} `json:"terminay"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("the written manifest is not JSON: %v\n%s", err, out)
	}
	var first struct {
		Harnesses            []agentbridge.Harness `json:"harnesses"`
		EnvironmentVariables []string              `json:"environmentVariables"`
	}
	if err := json.Unmarshal(doc.Terminay.Contributes.AgentSessionSources[0], &first); err != nil {
		t.Fatal(err)
	}
	harnesses, vars := terminaymanifest.Lists(sources.Registered())
	if !slices.Equal(first.Harnesses, harnesses) || !slices.Equal(first.EnvironmentVariables, vars) {
		t.Errorf("written arrays = %v, %v; want %v, %v", first.Harnesses, first.EnvironmentVariables, harnesses, vars)
	}
	if slices.Contains(vars, "OLD") || !slices.Contains(vars, "CODEX_HOME") || !slices.Contains(vars, "HOME") {
		t.Errorf("variables = %v", vars)
	}
	if !strings.Contains(string(out), "\"harnesses\": [\n\t\t\t\t\t\t{\n\t\t\t\t\t\t\t\"id\": \"claude-code\",") {
		t.Errorf("the harnesses are not indented like the file:\n%s", out)
	}
	// Written once, the manifest is current: a second run changes nothing.
	if changed, err := terminaymanifest.WriteFile(path, sources.Registered()); err != nil || changed {
		t.Errorf("second run: changed %v, %v", changed, err)
	}
}
