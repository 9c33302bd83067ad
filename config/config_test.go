package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/history"
)

// setup returns a home directory and an environment pointing at it.
func setup(t *testing.T, yaml string) (home string, env []string) {
	t.Helper()
	home = t.TempDir()
	env = []string{"HOME=" + home}
	if yaml != "" {
		dir := filepath.Join(home, ".config", "agentbridge")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home, env
}

func flags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q): %v", args, err)
	}
	return fs
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	home, env := setup(t, "")
	c, err := Load(flags(t), env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := &Config{
		Listen:         "127.0.0.1:7391",
		Auth:           "token",
		TokenFile:      filepath.Join(home, ".local/state/agentbridge/token"),
		StateDir:       filepath.Join(home, ".local/state/agentbridge"),
		AllowedHosts:   []string{},
		AllowedOrigins: []string{},
		Window:         2 * time.Hour,
		Linger:         10 * time.Minute,
		Heartbeat:      15 * time.Second,
		LogLevel:       "info",
		Env:            env,
		History: History{Enabled: true, Retention: 90 * 24 * time.Hour,
			File: filepath.Join(home, ".local/state/agentbridge/history.db")},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Load defaults mismatch (-want +got):\n%s", diff)
	}
	if !c.SourceEnabled("codex") {
		t.Errorf("SourceEnabled(codex) = false by default, want true")
	}
}

// Agent homes: sources.<id>.home from every layer, the legacy alias
// keys, and nothing when unset (the source registry then resolves the
// agent's own variable; see sources/all).
func TestSourceHomes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte("sources:\n  copilot: {home: /srv/copilot}\n  codex: {home: /srv/codex-generic}\ncodexHome: /srv/codex-alias\nclaudeConfigDir: /srv/claude-alias\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, env := setup(t, "")
	env = append(env, "AGENTBRIDGE_CONFIG="+file, "AGENTBRIDGE_SOURCES_PI_HOME=/srv/pi", "AGENTBRIDGE_SOURCES_CLAUDE_CODE_ENABLED=false")
	c, err := Load(nil, env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	for id, want := range map[string]string{
		"copilot":     "/srv/copilot",
		"codex":       "/srv/codex-generic", // the generic key wins over the alias
		"claude-code": "/srv/claude-alias",
		"pi":          "/srv/pi",
		"example":     "",
	} {
		if got := c.SourceHome(id); got != want {
			t.Errorf("SourceHome(%s) = %q, want %q", id, got, want)
		}
	}
	if c.SourceEnabled("claude-code") || !c.SourceEnabled("pi") {
		t.Errorf("SourceEnabled: claude-code %v pi %v, want false true", c.SourceEnabled("claude-code"), c.SourceEnabled("pi"))
	}
	if got := c.Getenv("AGENTBRIDGE_SOURCES_PI_HOME"); got != "/srv/pi" {
		t.Errorf("Getenv = %q", got)
	}
}

// Each layer overrides the one before: defaults < file < env < flags.
func TestLoadLayers(t *testing.T) {
	t.Parallel()
	const yaml = "listen: 127.0.0.1:1001\nwindow: 1h\nlogLevel: warn\nallowedHosts: [file.example]\n"
	tests := []struct {
		name       string
		env        []string
		args       []string
		wantListen string
		wantWindow time.Duration
		wantHosts  []string
	}{
		{"file over defaults", nil, nil, "127.0.0.1:1001", time.Hour, []string{"file.example"}},
		{"env over file", []string{"AGENTBRIDGE_LISTEN=127.0.0.1:1002", "AGENTBRIDGE_ALLOWED_HOSTS=a.example, b.example"}, nil,
			"127.0.0.1:1002", time.Hour, []string{"a.example", "b.example"}},
		{"flag over env", []string{"AGENTBRIDGE_LISTEN=127.0.0.1:1002", "AGENTBRIDGE_WINDOW=30m"},
			[]string{"--listen=127.0.0.1:1003", "--allowed-host=c.example"}, "127.0.0.1:1003", 30 * time.Minute, []string{"c.example"}},
		{"unchanged flag keeps the file's value", nil, []string{"--linger=1m"}, "127.0.0.1:1001", time.Hour, []string{"file.example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, env := setup(t, yaml)
			c, err := Load(flags(t, tt.args...), append(env, tt.env...))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Listen != tt.wantListen || c.Window != tt.wantWindow || c.LogLevel != "warn" {
				t.Errorf("Load: listen %q window %v logLevel %q, want %q %v warn", c.Listen, c.Window, c.LogLevel, tt.wantListen, tt.wantWindow)
			}
			if diff := cmp.Diff(tt.wantHosts, c.AllowedHosts); diff != "" {
				t.Errorf("allowedHosts mismatch (-want +got):\n%s", diff)
			}
			if c.File == "" {
				t.Errorf("Load: File empty, want the default config file")
			}
		})
	}
}

func TestLoadPushAndSources(t *testing.T) {
	t.Parallel()
	_, env := setup(t, `
push:
  - id: example-push
    displayName: Example Agent
    harnesses:
      - {id: example-agent, displayName: Example Agent}
sources:
  codex: {enabled: false}
`)
	c, err := Load(nil, env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []PushSource{{ID: "example-push", DisplayName: "Example Agent",
		Harnesses: []PushHarness{{ID: "example-agent", DisplayName: "Example Agent"}}}}
	if diff := cmp.Diff(want, c.Push); diff != "" {
		t.Errorf("push mismatch (-want +got):\n%s", diff)
	}
	if c.SourceEnabled("codex") || !c.SourceEnabled("claude-code") {
		t.Errorf("SourceEnabled: codex %v claude-code %v, want false true", c.SourceEnabled("codex"), c.SourceEnabled("claude-code"))
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		env  []string
		args []string
		want []string // substrings of the error
	}{
		{"unknown file key", "listen: 127.0.0.1:1\nlistne: x\n", nil, nil, []string{"unknown key", "listne"}},
		{"unknown nested key", "push:\n  - id: p\n    harnesses: [{id: h, colour: red}]\n", nil, nil, []string{"colour"}},
		{"unknown env", "", []string{"AGENTBRIDGE_LISTN=x"}, nil, []string{"AGENTBRIDGE_LISTN"}},
		{"bad auth", "", []string{"AGENTBRIDGE_AUTH=maybe"}, nil, []string{"AGENTBRIDGE_AUTH", "maybe"}},
		{"bad duration", "window: forever\n", nil, nil, []string{"window"}},
		{"duration without unit", "linger: 600\n", nil, nil, []string{"linger", "unit"}},
		{"negative linger", "", nil, []string{"--linger=-1s"}, []string{"linger"}},
		{"heartbeat above 15s", "heartbeat: 1m\n", nil, nil, []string{"heartbeat"}},
		{"bad log level", "logLevel: loud\n", nil, nil, []string{"logLevel", "loud"}},
		{"bad listen", "", nil, []string{"--listen=7391"}, []string{"listen"}},
		{"non-loopback without allowRemote", "", nil, []string{"--listen=0.0.0.0:7391"}, []string{"allowRemote"}},
		{"auth none on non-loopback", "", nil, []string{"--listen=0.0.0.0:7391", "--allow-remote", "--auth=none"}, []string{"auth none"}},
		{"bad push id", "push:\n  - id: Example_Push\n    harnesses: [{id: h}]\n", nil, nil, []string{"push[0].id", "Example_Push"}},
		{"push without harnesses", "push:\n  - id: p\n", nil, nil, []string{"push[0].harnesses"}},
		{"duplicate harness", "push:\n  - id: p\n    harnesses: [{id: h}, {id: h}]\n", nil, nil, []string{"push[0].harnesses[1].id"}},
		{"short token", "", []string{"AGENTBRIDGE_TOKEN=abc"}, nil, []string{"AGENTBRIDGE_TOKEN"}},
		{"bad origin", "allowedOrigins: [\"https://app.example/\"]\n", nil, nil, []string{"allowedOrigins"}},
		{"explicit config missing", "", nil, []string{"--config=/nonexistent/agentbridge.yaml"}, []string{"config file"}},
		{"env config missing", "", []string{"AGENTBRIDGE_CONFIG=/nonexistent/agentbridge.yaml"}, nil, []string{"config file"}},
		{"bad yaml", "listen: [\n", nil, nil, []string{"config file"}},
		{"webhook without events", "notify:\n  webhooks: [{url: \"https://ntfy.sh/t\"}]\n", nil, nil, []string{"notify.webhooks[0].events"}},
		{"webhook bad event", "notify:\n  webhooks: [{url: \"https://ntfy.sh/t\", events: [waiting, started]}]\n", nil, nil, []string{"notify.webhooks[0].events[1]", "started"}},
		{"webhook bad url", "notify:\n  webhooks: [{url: \"ftp://x/secret-path\", events: [done]}]\n", nil, nil, []string{"notify.webhooks[0].url"}},
		{"webhook unknown key", "notify:\n  webhooks: [{url: \"https://x\", events: [done], retries: 3}]\n", nil, nil, []string{"retries"}},
		{"webhook bad header", "notify:\n  webhooks: [{url: \"https://x\", events: [done], headers: {\"Bad Name\": v}}]\n", nil, nil, []string{"notify.webhooks[0].headers"}},
		{"webhook answerUrl not http", "notify:\n  webhooks: [{url: \"https://x\", events: [waiting], answerUrl: \"ftp://bridge\"}]\n", nil, nil, []string{"notify.webhooks[0].answerUrl"}},
		{"webhook answerUrl with a query", "notify:\n  webhooks: [{url: \"https://x\", events: [waiting], answerUrl: \"https://bridge/?a=1\"}]\n", nil, nil, []string{"notify.webhooks[0].answerUrl"}},
		{"webhook answerUrl with a user", "notify:\n  webhooks: [{url: \"https://x\", events: [waiting], answerUrl: \"https://u:p@bridge\"}]\n", nil, nil, []string{"notify.webhooks[0].answerUrl"}},
		{"webhook answerUrl with a fragment", "notify:\n  webhooks: [{url: \"https://x\", events: [waiting], answerUrl: \"https://bridge/#x\"}]\n", nil, nil, []string{"notify.webhooks[0].answerUrl"}},
		{"history retention not a duration", "history: {retention: forever}\n", nil, nil, []string{"history.retention", "forever"}},
		{"history retention in bad days", "", []string{"AGENTBRIDGE_HISTORY_RETENTION=1.5d"}, nil, []string{"AGENTBRIDGE_HISTORY_RETENTION", "1.5d"}},
		{"history retention too many days", "", nil, []string{"--history-retention=999999d"}, []string{"--history-retention", "too many days"}},
		{"history retention below an hour", "history: {retention: 10m}\n", nil, nil, []string{"history.retention", "minimum"}},
		{"history retention without unit", "history: {retention: 90}\n", nil, nil, []string{"history.retention", "unit"}},
		{"history enabled not a bool", "", []string{"AGENTBRIDGE_HISTORY_ENABLED=perhaps"}, nil, []string{"AGENTBRIDGE_HISTORY_ENABLED"}},
		{"history price without model", "history:\n  prices: [{model: a, input: 1}, {input: 3, output: 15}]\n", nil, nil, []string{"history.prices[1].model"}},
		{"history price negative", "history:\n  prices: [{model: gpt-5, input: 1.25, output: -10}]\n", nil, nil, []string{"history.prices[0].output", "-10"}},
		{"history price NaN", "history:\n  prices: [{model: gpt-5, cacheRead: .nan}]\n", nil, nil, []string{"history.prices[0].cacheRead", "NaN"}},
		{"history price infinite", "history:\n  prices: [{model: gpt-5, cacheWrite: .inf}]\n", nil, nil, []string{"history.prices[0].cacheWrite"}},
		{"history price not a number", "history:\n  prices: [{model: gpt-5, input: cheap}]\n", nil, nil, []string{"history.prices[0].input", "cheap"}},
		{"history price star inside", "history:\n  prices: [{model: \"claude-*-4\"}]\n", nil, nil, []string{"history.prices[0].model", "claude-*-4"}},
		{"history price twice", "history:\n  prices: [{model: gpt-5}, {model: gpt-5}]\n", nil, nil, []string{"history.prices[1].model", "twice"}},
		{"history price unknown key", "history:\n  prices: [{model: gpt-5, reasoning: 3}]\n", nil, nil, []string{"reasoning"}},
		{"history unknown key", "history: {keep: forever}\n", nil, nil, []string{"keep"}},
		{"webhook answerUrl without waiting", "notify:\n  webhooks: [{url: \"https://x\", events: [failed], answerUrl: \"https://bridge\"}]\n", nil, nil, []string{"notify.webhooks[0].answerUrl", "waiting"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, env := setup(t, tt.yaml)
			_, err := Load(flags(t, tt.args...), append(env, tt.env...))
			if err == nil {
				t.Fatalf("Load = nil error, want one naming %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestLoadHistory: the history section from every layer: durations in
// days or Go's units, the user's prices, the database in the state
// directory unless named (relative: made absolute), none without one.
func TestLoadHistory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		env  []string
		args []string
		want func(home string) History
	}{
		{"file", "history:\n  enabled: false\n  retention: 30d\n  file: /srv/h.db\n  prices:\n    - {model: \"claude-sonnet-4*\", input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75}\n    - {model: my-model}\n", nil, nil,
			func(string) History {
				return History{Retention: 30 * 24 * time.Hour, File: "/srv/h.db", Prices: []history.Price{
					{Model: "claude-sonnet-4*", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}, {Model: "my-model"}}}
			}},
		{"environment", "history: {enabled: false}\n", []string{"AGENTBRIDGE_HISTORY_ENABLED=true", "AGENTBRIDGE_HISTORY_RETENTION=720h", "AGENTBRIDGE_HISTORY_FILE=/var/h.db"}, nil,
			func(string) History { return History{Enabled: true, Retention: 720 * time.Hour, File: "/var/h.db"} }},
		{"flags", "", []string{"AGENTBRIDGE_HISTORY_RETENTION=720h"}, []string{"--history=false", "--history-retention=2d"},
			func(home string) History {
				return History{Retention: 48 * time.Hour, File: filepath.Join(home, ".local/state/agentbridge/history.db")}
			}},
		{"beside the token file", "tokenFile: /srv/ab/token\n", nil, nil,
			func(string) History {
				return History{Enabled: true, Retention: DefaultRetention, File: "/srv/ab/history.db"}
			}},
		{"no state directory", "", []string{"HOME=", "AGENTBRIDGE_TOKEN=0123456789abcdef0123456789abcdef"}, nil,
			func(string) History { return History{Enabled: true, Retention: DefaultRetention} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home, env := setup(t, tt.yaml)
			if tt.yaml != "" {
				env = append(env, "AGENTBRIDGE_CONFIG="+filepath.Join(home, ".config", "agentbridge", "config.yaml"))
			}
			c, err := Load(flags(t, tt.args...), append(env, tt.env...))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tt.want(home), c.History); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("relative file", func(t *testing.T) {
		_, env := setup(t, "")
		c, err := Load(flags(t, "--history-file=h.db"), env)
		if err != nil {
			t.Fatal(err)
		}
		if wd, _ := os.Getwd(); c.History.File != filepath.Join(wd, "h.db") {
			t.Errorf("file %q, want h.db in the working directory", c.History.File)
		}
	})
}

func TestLoadRemoteAllowedWithToken(t *testing.T) {
	t.Parallel()
	_, env := setup(t, "")
	c, err := Load(flags(t, "--listen=0.0.0.0:7391", "--allow-remote"), env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !c.AllowRemote {
		t.Errorf("AllowRemote = false, want true")
	}
}

func TestLoadIgnoresClientAndHarnessVariables(t *testing.T) {
	t.Parallel()
	_, env := setup(t, "")
	c, err := Load(nil, append(env, "AGENTBRIDGE_ADDR=127.0.0.1:9999", "AGENTBRIDGE_BIN=/tmp/agentbridge",
		"AGENTBRIDGE_LIVE=1", "AGENTBRIDGE_LIVE_CACHE=/tmp/cache", "AGENTBRIDGE_LIVE_REQUIRE=1", "AGENTBRIDGE_SCREENSHOT=1"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Listen != DefaultListen || c.ClientAddr() != "127.0.0.1:9999" {
		t.Errorf("Listen %q ClientAddr %q, want %q 127.0.0.1:9999", c.Listen, c.ClientAddr(), DefaultListen)
	}
}

func TestEnsureTokenMakesPrivateFileAndReusesIt(t *testing.T) {
	t.Parallel()
	home, env := setup(t, "")
	c, err := Load(nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Token(c); !errors.Is(err, ErrNoToken) {
		t.Fatalf("Token before the server ran: err %v, want ErrNoToken", err)
	}
	if _, err := os.Stat(c.TokenFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Token created %s (err %v); clients must not create it", c.TokenFile, err)
	}
	t1, err := EnsureToken(c)
	if err != nil {
		t.Fatalf("EnsureToken: %v", err)
	}
	if len(t1) < 43 {
		t.Errorf("token %d characters, want at least 43 (256 bits)", len(t1))
	}
	fi, err := os.Stat(c.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(filepath.Join(home, ".local/state/agentbridge"))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("token dir mode %04o, want 0700", di.Mode().Perm())
	}
	t2, err := EnsureToken(c)
	if err != nil || t2 != t1 {
		t.Errorf("EnsureToken again = %q, %v; want the same token", t2, err)
	}
	t3, err := Token(c)
	if err != nil || t3 != t1 {
		t.Errorf("Token = %q, %v; want the server's token", t3, err)
	}

	if err := os.Chmod(c.TokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureToken(c); err == nil || !strings.Contains(err.Error(), "0644") {
		t.Errorf("EnsureToken with a world-readable file: err %v, want a mode error", err)
	}
}

func TestTokenPrecedence(t *testing.T) {
	t.Parallel()
	_, env := setup(t, "")
	c, err := Load(nil, append(env, "AGENTBRIDGE_TOKEN=env-token-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(*Config) (string, error){Token, EnsureToken} {
		if got, err := f(c); err != nil || got != "env-token-0123456789abcdef" {
			t.Errorf("token = %q, %v; want the environment's", got, err)
		}
	}
	if _, err := os.Stat(c.TokenFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a token file was written although AGENTBRIDGE_TOKEN is set")
	}
	c.Auth = AuthNone
	if got, err := EnsureToken(c); err != nil || got != "" {
		t.Errorf("EnsureToken with auth none = %q, %v; want empty", got, err)
	}
}

func TestListenIsLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:7391", true}, {"127.1.2.3:0", true}, {"[::1]:7391", true}, {"localhost:7391", true},
		{"0.0.0.0:7391", false}, {":7391", false}, {"192.168.1.2:7391", false}, {"[::]:7391", false}, {"example.com:80", false},
	}
	for _, tt := range tests {
		got, err := ListenIsLoopback(tt.addr)
		if err != nil || got != tt.want {
			t.Errorf("ListenIsLoopback(%q) = %v, %v; want %v", tt.addr, got, err, tt.want)
		}
	}
}

func TestLoadWebhooks(t *testing.T) {
	t.Parallel()
	_, env := setup(t, `
notify:
  webhooks:
    - url: https://ntfy.sh/my-agents
      events: [waiting, blocked, failed]
      answerUrl: https://bridge.example.ts.net
    - url: https://hooks.slack.com/services/T0/B0/secret
      events: [failed]
      headers: {Authorization: Bearer abc}
`)
	c, err := Load(nil, env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []Webhook{
		{URL: "https://ntfy.sh/my-agents", Events: []string{"waiting", "blocked", "failed"}, AnswerURL: "https://bridge.example.ts.net"},
		{URL: "https://hooks.slack.com/services/T0/B0/secret", Events: []string{"failed"}, Headers: map[string]string{"Authorization": "Bearer abc"}},
	}
	if diff := cmp.Diff(want, c.Notify.Webhooks); diff != "" {
		t.Errorf("webhooks (-want +got):\n%s", diff)
	}
}

func TestWebhookErrorsDoNotQuoteTheURL(t *testing.T) {
	t.Parallel()
	_, env := setup(t, "notify:\n  webhooks: [{url: \"ftp://hooks.example/T0/B0/very-secret\", events: [done]}]\n")
	_, err := Load(nil, env)
	if err == nil || strings.Contains(err.Error(), "very-secret") {
		t.Errorf("Load error %v: want one that does not quote the URL", err)
	}
}

// A FIFO or a huge file where the configuration should be fails at once
// with an error that says so, instead of hanging the start.
func TestHostileConfigFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, p := range []string{fifo, big} {
		done := make(chan error, 1)
		go func() {
			_, err := Load(nil, []string{"HOME=" + dir, "AGENTBRIDGE_CONFIG=" + p})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "config file") {
				t.Errorf("Load(%s) = %v, want a config file error", filepath.Base(p), err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("Load(%s) hung", filepath.Base(p))
		}
	}
}
