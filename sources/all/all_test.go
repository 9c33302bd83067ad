package all_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentbridge/agentbridge/config"
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
	data, err := os.ReadFile(filepath.Join("..", "..", "extensions", "terminay", "package.json"))
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
				t.Errorf("harness %s of source %s is missing from the manifest", h.ID, r.Info.ID)
			} else if name != h.DisplayName {
				t.Errorf("harness %s: manifest says %q, the source %q", h.ID, name, h.DisplayName)
			}
		}
		for _, v := range r.Info.EnvironmentVariables {
			if !slices.Contains(decl.EnvironmentVariables, v) {
				t.Errorf("variable %s of source %s is missing from the manifest", v, r.Info.ID)
			}
		}
	}
	for id := range declared {
		if !registered[id] {
			t.Errorf("the manifest declares harness %s, which no source registers", id)
		}
	}
}
