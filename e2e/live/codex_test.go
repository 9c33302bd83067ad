package live

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const codexSource = "codex"

// codexRig is one private Codex install: CODEX_HOME, a project dir, a
// scripted Responses API server and a bridge watching the home. daemon
// says whether the TUI runs its agent in the shared background daemon
// (Codex's default) or in its own process (--no-daemon).
type codexRig struct {
	t      *testing.T
	cli    agentCLI
	bin    string
	home   string
	codex  string // CODEX_HOME
	cwd    string
	tmp    string // TMPDIR: the daemon's socket directory is private to the rig
	daemon bool
	model  *modelServer
	bridge *bridge
}

func newCodexRig(t *testing.T, c agentCLI, daemon bool) *codexRig {
	t.Helper()
	enabled(t)
	bin := install(t, c)
	dir := t.TempDir()
	r := &codexRig{t: t, cli: c, bin: bin, home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "project"),
		tmp: filepath.Join(dir, "tmp"), daemon: daemon}
	r.codex = filepath.Join(r.home, ".codex")
	for _, d := range []string{r.codex, r.cwd, r.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A git repository, so that Codex trusts the project without asking.
	exec.Command("git", "init", "-q", r.cwd).Run()
	r.model = newModelServer(t, responsesAPI{})
	cfg := fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = "%s/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[projects.%q]
trust_level = "trusted"

[analytics]
enabled = false

[notice]
hide_full_access_warning = true
`, r.model.URL, r.cwd)
	if err := os.WriteFile(filepath.Join(r.codex, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.killDaemons)
	if keep := os.Getenv("AGENTBRIDGE_LIVE_KEEP"); keep != "" {
		t.Cleanup(func() {
			dst := filepath.Join(keep, strings.NewReplacer("/", "_", " ", "_", ":", "").Replace(t.Name()))
			os.RemoveAll(dst)
			os.MkdirAll(dst, 0o755)
			exec.Command("cp", "-a", r.codex, dst).Run()
		})
	}
	r.bridge = startBridge(t, r.home)
	return r
}

func (r *codexRig) env() []string {
	return []string{
		"PATH=" + filepath.Dir(r.bin) + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + r.home,
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
		"SHELL=/bin/bash",
		"TMPDIR=" + r.tmp,
		"CODEX_HOME=" + r.codex,
		"MOCK_API_KEY=dummy",
		"RUST_LOG=error",
	}
}

// tui starts the interactive Codex in tmux and waits for its input box.
func (r *codexRig) tui(args ...string) *terminal {
	r.t.Helper()
	argv := []string{r.bin}
	if !r.daemon {
		argv = append(argv, "--no-daemon")
	}
	argv = append(argv, args...)
	term := openTerminal(r.t, r.cwd, r.env(), argv...)
	term.AwaitScreen(60*time.Second, "mock-model")
	return term
}

// daemons lists the processes of this rig's Codex daemon (an app-server
// whose CODEX_HOME is the rig's).
func (r *codexRig) daemons() []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !bytes.Contains(cmd, []byte("app-server")) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if bytes.Contains(env, []byte("CODEX_HOME="+r.codex+"\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

func (r *codexRig) killDaemons() {
	for _, pid := range r.daemons() {
		syscall.Kill(pid, syscall.SIGKILL)
		awaitGone(pid, 5*time.Second)
	}
}

// rollouts lists the rollout files.
func (r *codexRig) rollouts() []string {
	files, _ := filepath.Glob(filepath.Join(r.codex, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	return files
}

// describeRollouts condenses the rollouts to their record types.
func (r *codexRig) describeRollouts() string {
	var b strings.Builder
	for _, f := range r.rollouts() {
		data, _ := os.ReadFile(f)
		b.WriteString("rollout " + filepath.Base(f) + ":\n")
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			typ, sub := field(line, `"type":"`), ""
			if i := strings.Index(line, `"payload":{"type":"`); i >= 0 {
				sub = field(line[i:], `"type":"`)
			}
			b.WriteString("  " + typ + " " + sub + "\n")
		}
	}
	return b.String()
}

func field(s, key string) string {
	i := strings.Index(s, key)
	if i < 0 {
		return ""
	}
	s = s[i+len(key):]
	if j := strings.IndexByte(s, '"'); j >= 0 {
		return s[:j]
	}
	return s
}

func (r *codexRig) checkf(ok bool, format string, args ...any) {
	r.t.Helper()
	if !ok {
		r.t.Fatalf(format+"\n%s\nmodel requests:\n%s", append(args, r.describeRollouts(), r.model.Log())...)
	}
}

func (r *codexRig) session(timeout time.Duration, pred func(snapshot) bool) snapshot {
	r.t.Helper()
	return r.bridge.AwaitOne("one codex session", codexSource, timeout, pred)
}

func TestCodex(t *testing.T) {
	for _, c := range codexCLIs {
		for _, daemon := range []bool{true, false} {
			mode := "daemon"
			if !daemon {
				mode = "no-daemon"
			}
			t.Run(c.Version+"/"+mode, func(t *testing.T) {
				name := func(s string) string { return s + " (" + mode + ")" }
				scenario(t, c, name("prompt answered"), func(t *testing.T) { codexPrompt(t, c, daemon) })
			})
		}
	}
}

func codexPrompt(t *testing.T, c agentCLI, daemon bool) {
	r := newCodexRig(t, c, daemon)
	r.model.Script(Step{Text: "Hello from the live model."})
	term := r.tui()
	prompt(term, "say hello")
	term.AwaitScreen(60*time.Second, "Hello from the live model.")
	s := r.session(20*time.Second, func(s snapshot) bool { return s.Status == "done" })
	t.Logf("session %s history %v events %v daemons %v tui %d", s, r.bridge.History(codexSource, s.ID), r.bridge.Events(codexSource, s.ID), r.daemons(), term.PID())
	t.Logf("%s\n%s", r.describeRollouts(), r.model.Log())
	entries, _ := os.ReadDir(r.tmp)
	for _, e := range entries {
		t.Logf("tmp: %s", e.Name())
	}
}
