package live

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// terminal is one tmux server (its own socket) with one window running a
// CLI: keys go in with send-keys, the screen comes out with capture-pane.
type terminal struct {
	t      *testing.T
	socket string
}

var tmuxN atomic.Int64

// openTerminal runs argv with exactly env (nothing inherited) in cwd, in a
// fresh 160×45 tmux window.
func openTerminal(t *testing.T, cwd string, env []string, argv ...string) *terminal {
	t.Helper()
	term := &terminal{t: t, socket: fmt.Sprintf("abl-%d-%d", time.Now().UnixNano()%1e9, tmuxN.Add(1))}
	cmd := append([]string{"env", "-i"}, env...)
	cmd = append(cmd, argv...)
	quoted := make([]string, len(cmd))
	for i, a := range cmd {
		quoted[i] = shellQuote(a)
	}
	args := []string{"new-session", "-d", "-x", "160", "-y", "45", "-c", cwd, strings.Join(quoted, " ")}
	if out, err := term.tmux(args...); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	// Keep the pane after the CLI exits, so its last screen can be read.
	term.tmux("set-option", "-g", "remain-on-exit", "on")
	t.Cleanup(term.close)
	return term
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (term *terminal) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", term.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

// close ends the tmux server and waits (bounded) for the CLI to be gone,
// so that nothing writes into the test's directories after the test.
func (term *terminal) close() {
	out, _ := term.tmux("display-message", "-p", "#{pane_pid}")
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	term.tmux("kill-server")
	if pid > 0 {
		awaitGone(pid, 10*time.Second)
	}
}

// alive reports whether pid exists and is not a zombie (a CLI that
// exited under tmux stays a zombie until tmux reaps it).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

// awaitGone waits until pid no longer runs, killing it after timeout.
func awaitGone(pid int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PID is the pid of the pane's process (the CLI: env execs it).
func (term *terminal) PID() int {
	term.t.Helper()
	out, err := term.tmux("display-message", "-p", "#{pane_pid}")
	if err != nil {
		term.t.Fatalf("tmux pane_pid: %v: %s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		term.t.Fatalf("tmux pane_pid: %q", out)
	}
	return pid
}

// Dead reports whether the pane's process has exited.
func (term *terminal) Dead() bool {
	out, _ := term.tmux("display-message", "-p", "#{pane_dead}")
	return strings.TrimSpace(out) == "1"
}

// Screen is the visible text of the pane.
func (term *terminal) Screen() string {
	out, _ := term.tmux("capture-pane", "-p")
	return out
}

// Keys sends tmux key names ("Enter", "Escape", "C-c") or literal text
// with Type.
func (term *terminal) Keys(keys ...string) {
	term.t.Helper()
	if out, err := term.tmux(append([]string{"send-keys"}, keys...)...); err != nil {
		term.t.Fatalf("tmux send-keys: %v: %s", err, out)
	}
}

// Type types text literally (no key names).
func (term *terminal) Type(text string) {
	term.t.Helper()
	if out, err := term.tmux("send-keys", "-l", text); err != nil {
		term.t.Fatalf("tmux send-keys: %v: %s", err, out)
	}
}

// AwaitScreen waits until the screen contains every one of texts and
// returns it. A terminal has no change notification, so this looks at the
// screen every 100 ms: it is the test's eye, not the product's.
func (term *terminal) AwaitScreen(timeout time.Duration, texts ...string) string {
	term.t.Helper()
	s, ok := term.waitScreen(timeout, func(s string) bool {
		for _, x := range texts {
			if !strings.Contains(s, x) {
				return false
			}
		}
		return true
	})
	if !ok {
		term.t.Fatalf("the terminal never showed %q; it shows:\n%s", texts, s)
	}
	return s
}

// AwaitNoScreen waits until the screen no longer contains text.
func (term *terminal) AwaitNoScreen(timeout time.Duration, text string) string {
	term.t.Helper()
	s, ok := term.waitScreen(timeout, func(s string) bool { return !strings.Contains(s, text) })
	if !ok {
		term.t.Fatalf("the terminal still shows %q:\n%s", text, s)
	}
	return s
}

func (term *terminal) waitScreen(timeout time.Duration, ok func(string) bool) (string, bool) {
	deadline := time.Now().Add(timeout)
	for {
		s := term.Screen()
		if ok(s) {
			return s, true
		}
		if time.Now().After(deadline) {
			return s, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
