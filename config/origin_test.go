package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadErrorsNameTheirOrigin: a bad value is blamed on the layer it
// came from (flag, environment variable, or config file and line), by the
// name the user wrote there, with the value.
func TestLoadErrorsNameTheirOrigin(t *testing.T) {
	t.Parallel()
	const file = "@FILE@"
	tests := []struct {
		name    string
		yaml    string
		env     []string
		args    []string
		want    string // the whole error; @FILE@ is the config file
		notWant string
	}{
		{"variable beats a good file", "window: 1h\n", []string{"AGENTBRIDGE_WINDOW=banana"}, nil,
			`environment variable AGENTBRIDGE_WINDOW: "banana" is not a duration; give a unit, e.g. 90s, 10m or 2h`, "config file"},
		{"file and line", "listen: 127.0.0.1:1\nwindow: banana\n", nil, nil,
			"config file " + file + ` line 2: window: "banana" is not a duration; give a unit, e.g. 90s, 10m or 2h`, ""},
		{"duration without a unit", "\nlinger: 600\n", nil, nil,
			"config file " + file + " line 2: linger: 600 is not a duration; give a unit, e.g. 90s, 10m or 2h", ""},
		{"flag", "", nil, []string{"--heartbeat=1m"},
			"flag --heartbeat: 1m0s is above 15s (the longest idle interval between pings)", ""},
		{"flag beats the file", "logLevel: debug\n", nil, []string{"--log-level=loud"},
			`flag --log-level: "loud" is not debug, info, warn or error`, "config file"},
		{"bool variable", "", []string{"AGENTBRIDGE_ALLOW_REMOTE=maybe"}, nil,
			`environment variable AGENTBRIDGE_ALLOW_REMOTE: "maybe" is not true or false`, ""},
		{"source variable", "", []string{"AGENTBRIDGE_SOURCES_CODEX_ENABLED=perhaps"}, nil,
			`environment variable AGENTBRIDGE_SOURCES_CODEX_ENABLED: "perhaps" is not true or false`, ""},
		{"unknown key", "listen: 127.0.0.1:1\n\nlistne: x\n", nil, nil,
			"config file " + file + " line 3: listne: unknown key", ""},
		{"unknown nested key", "sources:\n  codex:\n    hme: /x\n", nil, nil,
			"config file " + file + " line 3: sources.codex.hme: unknown key", ""},
		{"push harness", "push:\n  - id: p\n    harnesses: [{id: h}, {id: h}]\n", nil, nil,
			"config file " + file + ` line 3: push[0].harnesses[1].id: "h" is declared twice`, ""},
		{"the token is never shown", "", []string{"AGENTBRIDGE_TOKEN=abc$def"}, nil,
			"environment variable AGENTBRIDGE_TOKEN: want 16 to 512 characters of [A-Za-z0-9._~+/=-]", "abc"},
		{"missing file named by flag", "", nil, []string{"--config=/nonexistent/agentbridge.yaml"},
			"config file named by --config: stat /nonexistent/agentbridge.yaml: no such file or directory", ""},
		{"missing file named by variable", "", []string{"AGENTBRIDGE_CONFIG=/nonexistent/agentbridge.yaml"}, nil,
			"config file named by AGENTBRIDGE_CONFIG: stat /nonexistent/agentbridge.yaml: no such file or directory", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home, env := setup(t, tt.yaml)
			_, err := Load(flags(t, tt.args...), append(env, tt.env...))
			if err == nil {
				t.Fatalf("Load = nil, want %q", tt.want)
			}
			want := strings.ReplaceAll(tt.want, file, filepath.Join(home, ".config", "agentbridge", "config.yaml"))
			if err.Error() != want {
				t.Errorf("Load error\n got %q\nwant %q", err, want)
			}
			if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("Load error %q mentions %q", err, tt.notWant)
			}
		})
	}
}
