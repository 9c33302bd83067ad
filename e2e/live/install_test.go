package live

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testenv"
	"golang.org/x/sys/unix"
)

// agentCLI is one pinned npm package of an agent CLI.
type agentCLI struct {
	Agent   string // "claude-code", "codex": the table's column group
	Pkg     string // npm package
	Version string // pinned version
	Bin     string // the command in node_modules/.bin
}

// Label is how the table names the CLI.
func (c agentCLI) Label() string { return c.Agent + " " + c.Version }

// The pinned CLIs: the newest and an older one, so that format drift
// between them shows as a failing scenario (Claude Code: about three
// months apart; Codex: a month, its rollouts move faster).
var (
	claudeCLIs = []agentCLI{
		{Agent: "claude-code", Pkg: "@anthropic-ai/claude-code", Version: "2.1.332", Bin: "claude"},
		{Agent: "claude-code", Pkg: "@anthropic-ai/claude-code", Version: "2.1.242", Bin: "claude"},
	}
	codexCLIs = []agentCLI{
		{Agent: "codex", Pkg: "@openai/codex", Version: "0.171.0", Bin: "codex"},
		{Agent: "codex", Pkg: "@openai/codex", Version: "0.165.0", Bin: "codex"},
	}
)

// cacheDir is where installed CLIs are kept between runs.
func cacheDir() string {
	if d := os.Getenv("AGENTBRIDGE_LIVE_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "agentbridge-live")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "agentbridge-live")
	}
	return filepath.Join(os.TempDir(), "agentbridge-live")
}

var (
	installMu  sync.Mutex
	installErr = map[string]error{} // a failed install is not retried in the same run
)

// install returns the path of the CLI's command, installing the pinned
// package into the cache when it is missing. When it cannot be installed
// the test is skipped (not failed): the suite checks the bridge, not the
// registry; with AGENTBRIDGE_LIVE_REQUIRE=1 (CI, where the registry is
// reachable and a skipped column would hide a gap) it fails instead.
func install(t *testing.T, c agentCLI) string {
	t.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	dir := filepath.Join(cacheDir(), "npm", strings.ReplaceAll(c.Pkg, "/", "+")+"@"+c.Version)
	bin := filepath.Join(dir, "node_modules", ".bin", c.Bin)
	installed := func() bool {
		fi, err := os.Stat(bin)
		return err == nil && fi.Mode()&0o111 != 0
	}
	if installed() {
		return bin
	}
	if err, ok := installErr[dir]; ok {
		mustHave(t, "%s@%s cannot be installed: %v", c.Pkg, c.Version, err)
	}
	// Another live suite on the machine may be installing it too: one
	// installs, the other then finds it (never removes it under a CLI
	// that runs from it).
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		t.Fatalf("lock the cache for %s: %v", c.Pkg, err)
	}
	defer unlock()
	if installed() {
		return bin
	}
	err = npmInstall(dir, c.Pkg+"@"+c.Version)
	if err == nil {
		if _, err = os.Stat(bin); err != nil {
			err = fmt.Errorf("installed, but %s is missing", c.Bin)
		}
	}
	if err != nil {
		installErr[dir] = err
		mustHave(t, "%s@%s cannot be installed: %v", c.Pkg, c.Version, err)
	}
	return bin
}

// lockFile takes an exclusive lock on path (created if missing) shared
// with other processes; unlock releases it.
func lockFile(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("flock %s: %w", filepath.Base(path), err)
	}
	return func() { f.Close() }, nil
}

// npmInstall installs spec into dir through a temporary directory, so that
// an interrupted install never looks complete.
func npmInstall(dir, spec string) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("no npm on PATH")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".install-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", spec)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	cmd.WaitDelay = 5 * time.Second
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("npm install %s: timed out", spec)
	}
	if err != nil {
		return fmt.Errorf("npm install %s: %v: %s", spec, err, lastLine(string(out)))
	}
	os.RemoveAll(dir)
	return os.Rename(tmp, dir)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// mustHave skips t, or fails it when the suite must run every CLI
// (AGENTBRIDGE_LIVE_REQUIRE=1, or CI=true as internal/testenv reads it).
func mustHave(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("AGENTBRIDGE_LIVE_REQUIRE") != "" || testenv.CI() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}
