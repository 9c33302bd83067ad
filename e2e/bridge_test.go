package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// repoRoot is the repository root, where artifacts/ lives.
var repoRoot string

// binDir holds the agentbridge binary that buildOnce makes.
var binDir string

var (
	buildOnce sync.Once
	bin       string
	buildErr  error
)

func TestMain(m *testing.M) {
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
func agentbridgeBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		bin = filepath.Join(binDir, "agentbridge")
		build := exec.Command("go", "build", "-o", bin, "./cmd/agentbridge")
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build agentbridge: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

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
	mu     sync.Mutex
	output bytes.Buffer
	cmd    *exec.Cmd
	done   chan struct{}
}

var dashURLRe = regexp.MustCompile(`https?://\S+[?&]token=\S+`)

// startBridge runs `agentbridge serve` on a free loopback port with a push
// source, and waits until it answers /healthz.
func startBridge(t *testing.T) *bridge {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(pushConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &bridge{
		t:      t,
		addr:   freeAddr(t),
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
	b.base = "http://" + b.addr
	b.bin = agentbridgeBin(t)
	b.start()
	t.Cleanup(b.stop)
	return b
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// start runs the process (again, after stop) on the same address.
func (b *bridge) start() {
	b.t.Helper()
	cmd := exec.Command(b.bin, "serve", "--listen", b.addr, "--config", b.config)
	cmd.Env = b.env
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start bridge: %v", err)
	}
	b.cmd = cmd
	b.done = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			b.mu.Lock()
			b.output.WriteString(line + "\n")
			b.mu.Unlock()
		}
	}()
	go func() {
		cmd.Wait()
		pw.Close()
		close(b.done)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get(b.base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-b.done:
			b.t.Fatalf("bridge exited early:\n%s", b.log())
		default:
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("bridge did not answer /healthz:\n%s", b.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the process with SIGTERM (SIGKILL after 10 s).
func (b *bridge) stop() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	select {
	case <-b.done:
		return
	default:
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
	}
}

func (b *bridge) log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.output.String()
}

// dashboardURL is the URL that signs a browser in, as a user gets it:
// `agentbridge open --print` (serve prints it only to a terminal).
func (b *bridge) dashboardURL() string {
	b.t.Helper()
	cmd := exec.Command(b.bin, "open", "--print", "--addr", b.addr)
	cmd.Env = b.env
	out, err := cmd.Output()
	if err != nil {
		b.t.Fatalf("agentbridge open --print: %v\n%s", err, b.log())
	}
	u := strings.TrimSpace(string(out))
	if !dashURLRe.MatchString(u) {
		b.t.Fatalf("agentbridge open --print = %q, want a URL with a token", u)
	}
	if strings.Contains(b.log(), "token=") {
		b.t.Errorf("serve printed the token to a pipe:\n%s", b.log())
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
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, b.base+"/v1/sources/example-push/publish", bytes.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("publish: %v", err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		b.t.Fatalf("publish: %s: %s", res.Status, strings.TrimSpace(string(out)))
	}
}
