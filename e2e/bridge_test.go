package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// repoRoot is the repository root, where artifacts/ lives.
var repoRoot string

// binDir holds the agentbridge binary the tests build (agentbridgeBin).
var binDir string

func TestMain(m *testing.M) {
	if os.Getenv(fakeAgentEnv) != "" {
		fakeAgent()
		return
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot = filepath.Dir(wd)
	binDir, err = os.MkdirTemp("", "agentbridge-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(binDir)
	defer func() { browserCancel() }() // the shared Chromium, if a test started it
	return m.Run()
}

// agentbridgeBin builds ./cmd/agentbridge once per test binary.
func agentbridgeBin(t *testing.T) string { return bridgetest.Binary(t, repoRoot, binDir) }

const pushConfig = `push:
  - id: example-push
    displayName: Example Agent
    harnesses:
      - {id: example-agent, displayName: Example Agent}
      - {id: other-agent, displayName: Other Agent}
`

// bridge is a running agentbridge process in a private home.
type bridge struct {
	t      *testing.T
	bin    string
	base   string // http://127.0.0.1:PORT
	addr   string
	token  string
	config string
	env    []string
	proc   *bridgetest.Process
	done   chan struct{} // closed when proc has exited
}

// startBridge runs `agentbridge serve` on a free loopback port with a push
// source, and waits until it printed its dashboard URL.
func startBridge(t *testing.T) *bridge { t.Helper(); return startBridgeConfig(t, pushConfig) }

// startBridgeConfig is startBridge with the configuration file's text;
// env is added to the bridge's environment.
func startBridgeConfig(t *testing.T, config string, env ...string) *bridge {
	t.Helper()
	b := newBridge(t, config, env...)
	b.start()
	return b
}

// newBridge is startBridgeConfig without the start: the bridge's home and
// configuration are made, for the test to fill the home before it starts
// the bridge (b.start).
func newBridge(t *testing.T, config string, env ...string) *bridge {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &bridge{
		t:      t,
		addr:   bridgetest.FreeAddr(t),
		token:  "e2e-token-0123456789abcdef",
		config: cfg,
		env: []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + home,
			"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
			"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
			"CODEX_HOME=" + filepath.Join(home, ".codex"),
		},
	}
	b.env = append(b.env, "AGENTBRIDGE_TOKEN="+b.token)
	b.env = append(b.env, env...)
	b.base = "http://" + b.addr
	b.bin = agentbridgeBin(t)
	t.Cleanup(b.stop)
	return b
}

// start runs the process (again, after stop) on the same address.
func (b *bridge) start() {
	b.t.Helper()
	cmd := exec.Command(b.bin, "serve", "--listen", b.addr, "--config", b.config)
	cmd.Env = b.env
	p := bridgetest.Exec(b.t, cmd)
	done := make(chan struct{})
	go func() { <-p.Exited; close(done) }()
	b.proc, b.done = p, done
}

// stop ends the process with SIGTERM (SIGKILL after 10 s).
func (b *bridge) stop() {
	if b.proc == nil {
		return
	}
	select {
	case <-b.done:
		return
	default:
	}
	b.proc.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		b.proc.Cmd.Process.Kill()
		<-b.done
	}
}

// dashURLRe matches a dashboard URL that signs a browser in.
var dashURLRe = regexp.MustCompile(`https?://\S+[?&]token=\S+`)

// dashboardURL is the URL that signs a browser in, as a user gets it:
// `agentbridge open --print` (serve prints it only to a terminal).
func (b *bridge) dashboardURL() string {
	b.t.Helper()
	cmd := exec.Command(b.bin, "open", "--print", "--addr", b.addr)
	cmd.Env = b.env
	out, err := cmd.Output()
	if err != nil {
		b.t.Fatalf("agentbridge open --print: %v\n%s", err, b.proc.Stderr)
	}
	u := strings.TrimSpace(string(out))
	if !dashURLRe.MatchString(u) {
		b.t.Fatalf("agentbridge open --print = %q, want a URL with a token", u)
	}
	if strings.Contains(b.proc.Line+"\n"+b.proc.Stderr.String(), "token=") {
		b.t.Errorf("serve printed the token to a pipe:\n%s\n%s", b.proc.Line, b.proc.Stderr)
	}
	return u
}

// publish posts ops to the push source and fails the test on an error.
func (b *bridge) publish(ops any) {
	b.t.Helper()
	body, err := json.Marshal(ops)
	if err != nil {
		b.t.Fatal(err)
	}
	res, err := client.New(b.addr, b.token).Do(context.Background(), http.MethodPost, "/v1/sources/example-push/publish", nil, bytes.NewReader(body), "")
	if err != nil {
		b.t.Fatalf("publish: %v", err)
	}
	res.Body.Close()
}
