// Package config loads the bridge's settings in layers, later wins: built-in
// defaults < the YAML file < AGENTBRIDGE_* environment variables < flags
// (docs/contract.md section 5). Unknown keys, in the file or the environment, are an
// error that names the key. Load reads no globals: the flag set and the
// environment are passed in, so that tests and the client subcommands can
// load it the same way the server does.
//
// It also owns the bridge's token (Token, EnsureToken): the server makes and
// keeps it, the client subcommands only read it.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	envprovider "github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/internal/smallfile"

	"github.com/agentbridge/agentbridge/validate"
)

// maxConfigBytes bounds the YAML configuration file.
const maxConfigBytes = 1 << 20

// bytesProvider is a koanf.Provider of a configuration file already read.
type bytesProvider []byte

func (b bytesProvider) ReadBytes() ([]byte, error) { return b, nil }
func (b bytesProvider) Read() (map[string]any, error) {
	return nil, errors.New("config: a byte provider needs a parser")
}

// DefaultListen is the address the bridge serves on when nothing else is
// configured.
const DefaultListen = "127.0.0.1:7391"

// Auth modes.
const (
	AuthToken = "token" // every /v1 request needs the token (the default)
	AuthNone  = "none"  // no token; refused on a non-loopback address
)

// Config is the bridge's settings after all layers are merged and checked.
// The koanf tag of each field is its key in the YAML file.
type Config struct {
	// Listen is the host:port the server listens on. Port 0 picks a free one.
	Listen string `koanf:"listen"`
	// AllowRemote permits a listen address that is not loopback (auth must
	// then be on).
	AllowRemote bool `koanf:"allowRemote"`
	// Auth is AuthToken or AuthNone.
	Auth string `koanf:"auth"`
	// Token is the bearer token; empty means: use (or make) TokenFile's.
	Token string `koanf:"token"`
	// TokenFile is where the generated token is kept (mode 0600).
	TokenFile string `koanf:"tokenFile"`
	// AllowedHosts are extra Host names ("name" or "name:port") the server
	// answers to besides localhost and loopback IPs.
	AllowedHosts []string `koanf:"allowedHosts"`
	// AllowedOrigins are exact browser origins ("scheme://host[:port]")
	// allowed to call the API cross-origin; they get CORS headers.
	AllowedOrigins []string `koanf:"allowedOrigins"`
	// Push declares the push sources, which take POST
	// /v1/sources/{id}/publish.
	Push []PushSource `koanf:"push"`
	// Remotes are other bridges whose sessions this one shows beside its
	// own (see Remote).
	Remotes []Remote `koanf:"remotes"`
	// Sources sets built-in sources by id (e.g. "codex"): whether each is
	// on (absent means on) and where its agent's home is.
	Sources map[string]SourceSwitch `koanf:"sources"`
	// Window is how far back journals are read at start (recent sessions).
	Window time.Duration `koanf:"window"`
	// Linger is how long an exited session stays listed.
	Linger time.Duration `koanf:"linger"`
	// Heartbeat is the idle interval of the stream's ": ping" comment.
	Heartbeat time.Duration `koanf:"heartbeat"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `koanf:"logLevel"`
	// ClaudeConfigDir, CodexHome and ExampleAgentHome are the older names
	// of sources.claude-code.home, sources.codex.home and
	// sources.example.home, kept as aliases (the generic key wins when
	// both are set). Empty means: the agent's own variable, else its
	// default home (see SourceHome).
	ClaudeConfigDir  string `koanf:"claudeConfigDir"`
	CodexHome        string `koanf:"codexHome"`
	ExampleAgentHome string `koanf:"exampleAgentHome"`
	// Addr is the address the client subcommands dial (AGENTBRIDGE_ADDR);
	// empty means Listen. The server ignores it.
	Addr string `koanf:"addr"`
	// Notify says whom the server tells when a session needs someone.
	Notify Notify `koanf:"notify"`
	// Hooks is the hooks section: what the bridge does with the agents'
	// hooks beyond folding them.
	Hooks Hooks `koanf:"hooks"`
	// History is the history section: whether the bridge keeps what its
	// sessions did (GET /v1/history, GET /v1/usage), for how long, where,
	// and the prices its cost estimates use.
	History History `koanf:"history"`

	// File is the YAML file that was loaded, empty when none was.
	File string `koanf:"-"`
	// Env is the environment the configuration was loaded from; sources
	// read their agents' own variables from it (Getenv).
	Env []string `koanf:"-"`
	// StateDir is the bridge's state directory: the token file's directory
	// ($XDG_STATE_HOME/agentbridge or ~/.local/state/agentbridge unless
	// tokenFile says otherwise); empty when it cannot be named. The server
	// keeps its revision mark there (RevisionFile).
	StateDir string `koanf:"-"`
}

// Hooks is the hooks section.
type Hooks struct {
	// Answer turns answering on (off by default): a permission prompt
	// whose hook was installed with 'agentbridge hooks install --answer'
	// waits for an answer given through the bridge (POST
	// /v1/sessions/{source}/{id}/waits/{waitId}/answer), and every answer
	// is written to the audit log in StateDir (AnswersFile).
	Answer bool `koanf:"answer"`
}

// AnswersFile is the answers' audit log in StateDir, "" without one.
func (c *Config) AnswersFile() string {
	if c.StateDir == "" {
		return ""
	}
	return filepath.Join(c.StateDir, "answers.jsonl")
}

// Notify is the notify section: the webhooks the server posts transitions
// to.
type Notify struct {
	Webhooks []Webhook `koanf:"webhooks"`
}

// Webhook is one receiver of transitions: an http(s) URL, the events it
// wants (waiting, blocked, failed, done, exited) and extra request headers
// (an ntfy token, say). The URL and the header values are secrets of the
// user's: errors never quote them.
type Webhook struct {
	URL     string            `koanf:"url"`
	Events  []string          `koanf:"events"`
	Headers map[string]string `koanf:"headers"`
	// AnswerURL, when set, is this bridge's address as the webhook's
	// reader reaches it (https://bridge.example.ts.net, say): a waiting
	// transition whose prompt can be answered (hooks.answer) then carries
	// an answer link, AnswerURL/answer/<secret>. Whoever has the link can
	// answer that prompt while it is open (docs/answering.md): set it only
	// for a receiver you trust with that.
	AnswerURL string `koanf:"answerUrl"`
}

// WebhookEvents are the events a webhook may ask for.
var WebhookEvents = []string{"waiting", "blocked", "failed", "done", "exited"}

// headerName is an HTTP header field name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func (w Webhook) check(i int, bad func(string, ...any)) {
	p := fmt.Sprintf("notify.webhooks[%d]", i)
	if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("%s.url: is not an absolute http or https URL", p)
	}
	if len(w.Events) == 0 {
		bad("%s.events: name at least one of %s", p, strings.Join(WebhookEvents, ", "))
	}
	for j, e := range w.Events {
		if !slices.Contains(WebhookEvents, e) {
			bad("%s.events[%d]: %q is not one of %s", p, j, e, strings.Join(WebhookEvents, ", "))
		}
	}
	if w.AnswerURL != "" {
		if u, err := url.Parse(w.AnswerURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(w.AnswerURL, "#") {
			bad("%s.answerUrl: is not an http or https URL of this bridge (scheme, host, optional path; no user, query or fragment)", p)
		}
		if !slices.Contains(w.Events, "waiting") {
			bad("%s.answerUrl: answer links go with waiting transitions: add waiting to events", p)
		}
	}
	for k, v := range w.Headers {
		if !headerName.MatchString(k) {
			bad("%s.headers: %q is not a header name", p, k)
		} else if strings.ContainsAny(v, "\r\n\x00") {
			bad("%s.headers.%s: the value holds a line break", p, k)
		}
	}
}

// PushSource declares a push source.
type PushSource struct {
	ID          string        `koanf:"id"`
	DisplayName string        `koanf:"displayName"`
	Harnesses   []PushHarness `koanf:"harnesses"`
}

// PushHarness declares one harness of a push source.
type PushHarness struct {
	ID          string `koanf:"id"`
	DisplayName string `koanf:"displayName"`
}

// SourceSwitch turns a built-in source on or off and names its agent's
// home.
type SourceSwitch struct {
	Enabled *bool  `koanf:"enabled"`
	Home    string `koanf:"home"`
}

// legacyHomes maps the older top-level home keys to the source whose
// sources.<id>.home they alias. New sources have only the generic key.
var legacyHomes = map[string]func(*Config) string{
	"claude-code": func(c *Config) string { return c.ClaudeConfigDir },
	"codex":       func(c *Config) string { return c.CodexHome },
	"example":     func(c *Config) string { return c.ExampleAgentHome },
}

// SourceHome returns the home configured for source id
// (sources.<id>.home, else its legacy alias key), absolute, or empty when
// none is configured: the source then looks at its agent's own variable
// and default home.
func (c *Config) SourceHome(id string) string {
	if h := c.Sources[id].Home; h != "" {
		return h
	}
	if f := legacyHomes[id]; f != nil {
		return f(c)
	}
	return ""
}

// Getenv reads a variable of the environment the configuration was
// loaded from (the last value wins, as in os.Getenv).
func (c *Config) Getenv(key string) string { return environ(c.Env).get(key) }

// SourceEnabled reports whether the built-in source id is switched on
// (sources.<id>.enabled, default true).
func (c *Config) SourceEnabled(id string) bool {
	s, ok := c.Sources[id]
	return !ok || s.Enabled == nil || *s.Enabled
}

// ClientAddr is the host:port a client subcommand dials: Addr when set,
// else Listen.
func (c *Config) ClientAddr() string {
	if c.Addr != "" {
		return c.Addr
	}
	return c.Listen
}

// envKeys maps every AGENTBRIDGE_* variable to its key. Variables outside
// this map and envIgnored are an error.
var envKeys = map[string]string{
	"AGENTBRIDGE_LISTEN":            "listen",
	"AGENTBRIDGE_ALLOW_REMOTE":      "allowRemote",
	"AGENTBRIDGE_AUTH":              "auth",
	"AGENTBRIDGE_TOKEN":             "token",
	"AGENTBRIDGE_TOKEN_FILE":        "tokenFile",
	"AGENTBRIDGE_ALLOWED_HOSTS":     "allowedHosts",
	"AGENTBRIDGE_ALLOWED_ORIGINS":   "allowedOrigins",
	"AGENTBRIDGE_WINDOW":            "window",
	"AGENTBRIDGE_LINGER":            "linger",
	"AGENTBRIDGE_HEARTBEAT":         "heartbeat",
	"AGENTBRIDGE_LOG_LEVEL":         "logLevel",
	"AGENTBRIDGE_ADDR":              "addr",
	"AGENTBRIDGE_HOOKS_ANSWER":      "hooks.answer",
	"AGENTBRIDGE_HISTORY_ENABLED":   "history.enabled",
	"AGENTBRIDGE_HISTORY_RETENTION": "history.retention",
	"AGENTBRIDGE_HISTORY_FILE":      "history.file",
}

// envIgnored are AGENTBRIDGE_* variables that are not settings: the config
// file's path (read by Load itself) and the switches of the project's own
// test suites (the binary under test, the screenshot run, the live suite's
// AGENTBRIDGE_LIVE and every AGENTBRIDGE_LIVE_*), which a developer's shell
// may well export while it runs the CLI.
var envIgnored = map[string]bool{
	"AGENTBRIDGE_CONFIG":     true,
	"AGENTBRIDGE_BIN":        true,
	"AGENTBRIDGE_SCREENSHOT": true,
	"AGENTBRIDGE_LIVE":       true,
}

// ignoredEnv reports whether name is one of envIgnored or a live-suite
// switch (AGENTBRIDGE_LIVE_*).
func ignoredEnv(name string) bool {
	return envIgnored[name] || strings.HasPrefix(name, "AGENTBRIDGE_LIVE_")
}

// flagKeys maps each flag Load understands to its key. Load reads only the
// flags of this table that the given set defines and the user changed.
var flagKeys = map[string]string{
	"listen":             "listen",
	"allow-remote":       "allowRemote",
	"auth":               "auth",
	"token-file":         "tokenFile",
	"allowed-host":       "allowedHosts",
	"allowed-origin":     "allowedOrigins",
	"window":             "window",
	"linger":             "linger",
	"heartbeat":          "heartbeat",
	"log-level":          "logLevel",
	"claude-config-dir":  "claudeConfigDir",
	"codex-home":         "codexHome",
	"example-agent-home": "exampleAgentHome",
	"addr":               "addr",
	"answer":             "hooks.answer",
	"history":            "history.enabled",
	"history-retention":  "history.retention",
	"history-file":       "history.file",
}

// RegisterFlags adds the server's flags to fs: --config, --listen,
// --allow-remote, --auth, --token-file, --allowed-host, --allowed-origin,
// --window, --linger, --heartbeat, --log-level, the agent homes and the
// history's --history, --history-retention and --history-file. There is
// deliberately no --token: a token in argv is visible to every local user.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML config `file` (default $XDG_CONFIG_HOME/agentbridge/config.yaml when present)")
	fs.String("listen", DefaultListen, "`host:port` to serve on (port 0 picks a free port)")
	fs.Bool("allow-remote", false, "permit a non-loopback --listen address (needs --auth token)")
	fs.String("auth", AuthToken, "authentication: token or none (none only on loopback)")
	fs.String("token-file", "", "`file` that keeps the generated token (default $XDG_STATE_HOME/agentbridge/token)")
	fs.StringSlice("allowed-host", nil, "extra Host `name` to answer to (repeatable)")
	fs.StringSlice("allowed-origin", nil, "browser `origin` allowed cross-origin, e.g. https://app.example (repeatable)")
	fs.Duration("window", 2*time.Hour, "how far back agent journals are read at start")
	fs.Duration("linger", 10*time.Minute, "how long exited sessions stay listed")
	fs.Duration("heartbeat", 15*time.Second, "idle interval of the stream's ping comment")
	fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.String("claude-config-dir", "", "Claude Code home (default $CLAUDE_CONFIG_DIR or ~/.claude)")
	fs.String("codex-home", "", "Codex home (default $CODEX_HOME or ~/.codex)")
	fs.String("example-agent-home", "", "example agent home (default $EXAMPLE_AGENT_HOME; unset = off)")
	fs.Bool("history", true, "keep the history of sessions, turns, waits and usage (--history=false: off)")
	fs.String("history-retention", "90d", "how long the history is kept (`age`: 90d, 720h)")
	fs.String("history-file", "", "the history's database `file` (default history.db in the state directory)")
}

// environ is a KEY=VALUE environment as os.Environ returns it.
type environ []string

func (e environ) get(key string) string {
	for i := len(e) - 1; i >= 0; i-- { // the last one wins, as in os.Getenv
		if k, v, ok := strings.Cut(e[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Load merges the layers and checks the result. fs holds the parsed
// command-line flags (nil for none); only flags named as in RegisterFlags
// are read, and only when the user set them. env is the environment
// (os.Environ()); HOME, XDG_CONFIG_HOME, XDG_STATE_HOME and the agents'
// variables are read from it, never from the process.
//
// The YAML file is --config, else AGENTBRIDGE_CONFIG, else the default
// path when it exists; a file named explicitly must exist.
func Load(fs *pflag.FlagSet, env []string) (*Config, error) {
	e := environ(env)
	k := koanf.New(".")
	og := origins{} // where each value came from, for errors

	if err := k.Load(confmap.Provider(defaults(e), "."), nil); err != nil {
		return nil, fmt.Errorf("load defaults: %w", err)
	}

	path, explicit, namedBy := e.get("AGENTBRIDGE_CONFIG"), false, ""
	if path != "" {
		explicit, namedBy = true, " named by AGENTBRIDGE_CONFIG"
	}
	if fs != nil {
		if f := fs.Lookup("config"); f != nil && f.Changed {
			path, explicit, namedBy = f.Value.String(), true, " named by --config"
		}
	}
	if !explicit {
		path = defaultConfigFile(e)
	}
	loaded := ""
	if path != "" {
		_, err := os.Stat(path)
		switch {
		case err == nil:
			// Read without blocking and capped: a FIFO or a huge file
			// where the config should be fails clearly instead of hanging.
			data, err := smallfile.Read(path, maxConfigBytes)
			if err != nil {
				return nil, fmt.Errorf("config file %s: %w", path, err)
			}
			if err := k.Load(bytesProvider(data), yaml.Parser()); err != nil {
				return nil, fmt.Errorf("config file %s: %w", path, err)
			}
			loaded = path
			og.addFile(path, data)
		case explicit || !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("config file%s: %w", namedBy, err)
		}
	}

	var unknownEnv []string
	err := k.Load(envprovider.Provider(".", envprovider.Opt{
		Prefix:      "AGENTBRIDGE_",
		EnvironFunc: func() []string { return env },
		TransformFunc: func(name, v string) (string, any) {
			if ignoredEnv(name) {
				return "", nil
			}
			key, ok := envKeys[name]
			if !ok {
				key, ok = sourceEnvKey(name)
			}
			if !ok {
				unknownEnv = append(unknownEnv, name)
				return "", nil
			}
			og.setEnv(key, name, v)
			if key == "allowedHosts" || key == "allowedOrigins" {
				return key, splitList(v)
			}
			return key, v
		},
	}), nil)
	if err != nil {
		return nil, fmt.Errorf("load environment: %w", err)
	}
	if len(unknownEnv) > 0 {
		slices.Sort(unknownEnv)
		return nil, fmt.Errorf("unknown environment variable %s (known: %s)",
			strings.Join(unknownEnv, ", "), strings.Join(knownEnv(), ", "))
	}

	if fs != nil {
		err := k.Load(posflag.ProviderWithFlag(fs, ".", nil, func(f *pflag.Flag) (string, any) {
			key, ok := flagKeys[f.Name]
			if !ok {
				return "", nil
			}
			if f.Changed {
				og.setFlag(key, f)
			}
			return key, posflag.FlagVal(fs, f)
		}), nil)
		if err != nil {
			return nil, fmt.Errorf("load flags: %w", err)
		}
	}

	var c Config
	dc := &mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			durationNeedsUnit,
			durationInDays,
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
			mapstructure.TextUnmarshallerHookFunc()),
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		TagName:          "koanf",
	}
	if err := k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{DecoderConfig: dc}); err != nil {
		return nil, og.decodeError(err)
	}
	c.File = loaded
	c.Env = env
	homes := []*string{&c.ClaudeConfigDir, &c.CodexHome, &c.ExampleAgentHome, &c.TokenFile, &c.History.File}
	for id, sw := range c.Sources {
		if sw.Home != "" {
			abs, err := filepath.Abs(sw.Home)
			if err != nil {
				return nil, fmt.Errorf("sources.%s.home: make %q absolute: %w", id, sw.Home, err)
			}
			sw.Home = abs
			c.Sources[id] = sw
		}
	}
	for _, home := range homes {
		if *home != "" && !filepath.IsAbs(*home) {
			abs, err := filepath.Abs(*home)
			if err != nil {
				return nil, fmt.Errorf("make %q absolute: %w", *home, err)
			}
			*home = abs
		}
	}
	if c.TokenFile != "" {
		c.StateDir = filepath.Dir(c.TokenFile)
	}
	if c.History.File == "" && c.StateDir != "" {
		c.History.File = filepath.Join(c.StateDir, "history.db")
	}
	if err := c.Validate(); err != nil {
		return nil, og.validateError(err)
	}
	return &c, nil
}

// durationNeedsUnit refuses a bare number for a duration ("window: 7200"
// would otherwise mean 7200 ns).
func durationNeedsUnit(from, to reflect.Type, data any) (any, error) {
	if to == reflect.TypeFor[time.Duration]() && from != to && from.Kind() != reflect.String {
		return nil, fmt.Errorf("%v is not a duration; give a unit, e.g. 90s, 10m or 2h", data)
	}
	return data, nil
}

// sourceEnvKey maps AGENTBRIDGE_SOURCES_<ID>_HOME and _ENABLED to
// sources.<id>.home and .enabled; the id is lower-cased, with '_' for '-'
// (AGENTBRIDGE_SOURCES_CLAUDE_CODE_ENABLED=false).
func sourceEnvKey(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "AGENTBRIDGE_SOURCES_")
	if !ok {
		return "", false
	}
	for suffix, field := range map[string]string{"_HOME": "home", "_ENABLED": "enabled"} {
		if id, ok := strings.CutSuffix(rest, suffix); ok && id != "" {
			id = strings.ReplaceAll(strings.ToLower(id), "_", "-")
			if validate.ValidHarnessID(id) {
				return "sources." + id + "." + field, true
			}
		}
	}
	return "", false
}

func knownEnv() []string {
	var names []string
	for n := range envKeys {
		names = append(names, n)
	}
	names = append(names, "AGENTBRIDGE_CONFIG")
	slices.Sort(names)
	return names
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// defaults is the bottom layer. The agent homes are not here: each
// source resolves its own from its agent's variables (Config.SourceHome
// and the source registry).
func defaults(e environ) map[string]any {
	return map[string]any{
		"listen":           DefaultListen,
		"allowRemote":      false,
		"auth":             AuthToken,
		"token":            "",
		"tokenFile":        defaultTokenFile(e),
		"allowedHosts":     []string{},
		"allowedOrigins":   []string{},
		"window":           "2h",
		"linger":           "10m",
		"heartbeat":        "15s",
		"logLevel":         "info",
		"claudeConfigDir":  "",
		"codexHome":        "",
		"exampleAgentHome": "",
		"addr":             "",
		"history":          map[string]any{"enabled": true, "retention": "90d", "file": ""},
	}
}

// defaultConfigFile is $XDG_CONFIG_HOME/agentbridge/config.yaml, or
// ~/.config/agentbridge/config.yaml; empty when neither can be named.
func defaultConfigFile(e environ) string {
	if d := e.get("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentbridge", "config.yaml")
	}
	if h := e.get("HOME"); h != "" {
		return filepath.Join(h, ".config", "agentbridge", "config.yaml")
	}
	return ""
}

// defaultTokenFile is $XDG_STATE_HOME/agentbridge/token, or
// ~/.local/state/agentbridge/token; empty when neither can be named.
func defaultTokenFile(e environ) string {
	if d := e.get("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentbridge", "token")
	}
	if h := e.get("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "agentbridge", "token")
	}
	return ""
}

// Validate checks every setting and returns all problems found, joined.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	switch c.Auth {
	case AuthToken, AuthNone:
	default:
		bad("auth: %q is not token or none", c.Auth)
	}
	loopback, err := ListenIsLoopback(c.Listen)
	if err != nil {
		bad("listen: %v", err)
	} else if !loopback {
		if c.Auth == AuthNone {
			bad("listen: auth none is refused on the non-loopback address %s", c.Listen)
		} else if !c.AllowRemote {
			bad("listen: %s is not a loopback address; set allowRemote (--allow-remote) to serve on it", c.Listen)
		}
	}
	if c.Token != "" {
		if err := checkToken(c.Token); err != nil {
			bad("token: %v", err)
		}
	}
	if c.Auth == AuthToken && c.Token == "" && c.TokenFile == "" {
		bad("tokenFile: cannot name a token file (HOME and XDG_STATE_HOME are unset); set token or tokenFile")
	}
	for _, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ \t@,?#") {
			bad("allowedHosts: %q is not a host name", h)
		}
	}
	for _, o := range c.AllowedOrigins {
		if err := checkOrigin(o); err != nil {
			bad("allowedOrigins: %q: %v", o, err)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
		min  time.Duration
	}{{"window", c.Window, 0}, {"linger", c.Linger, 0}, {"heartbeat", c.Heartbeat, time.Second}} {
		if d.v < d.min {
			bad("%s: %v is below the minimum %v", d.name, d.v, d.min)
		}
	}
	if c.Heartbeat > 15*time.Second {
		bad("heartbeat: %v is above 15s (the longest idle interval between pings)", c.Heartbeat)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("logLevel: %q is not debug, info, warn or error", c.LogLevel)
	}
	seen := map[string]bool{}
	for i, p := range c.Push {
		if !validate.ValidHarnessID(p.ID) {
			bad("push[%d].id: %q is not a valid source id ([a-z][a-z0-9-]{0,63})", i, p.ID)
		} else if seen[p.ID] {
			bad("push[%d].id: %q is declared twice", i, p.ID)
		}
		seen[p.ID] = true
		if len(p.Harnesses) == 0 {
			bad("push[%d].harnesses: a push source needs at least one harness", i)
		}
		hs := map[string]bool{}
		for j, h := range p.Harnesses {
			if !validate.ValidHarnessID(h.ID) {
				bad("push[%d].harnesses[%d].id: %q is not a valid harness id ([a-z][a-z0-9-]{0,63})", i, j, h.ID)
			} else if hs[h.ID] {
				bad("push[%d].harnesses[%d].id: %q is declared twice", i, j, h.ID)
			}
			hs[h.ID] = true
		}
	}
	for id := range c.Sources {
		if !validate.ValidHarnessID(id) {
			bad("sources: %q is not a valid source id", id)
		}
	}
	for i, w := range c.Notify.Webhooks {
		w.check(i, bad)
	}
	c.History.check(bad)
	errs = append(errs, checkRemotes(c.Remotes)...)
	return errors.Join(errs...)
}

// ListenIsLoopback reports whether the host:port address listens on
// loopback only: "localhost" or a loopback IP. An empty host (all
// interfaces) is not loopback.
func ListenIsLoopback(addr string) (bool, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return false, fmt.Errorf("%q: bad port", addr)
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false, nil // empty (all interfaces), or a name that may resolve anywhere
	}
	return ip.IsLoopback(), nil
}

func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Scheme == "" || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return errors.New("want scheme://host[:port] with nothing after it")
	}
	if u.String() != o {
		return errors.New("not in its canonical form")
	}
	return nil
}
