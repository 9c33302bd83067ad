package live

import (
	"fmt"
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
	procs  *procSet
}

var tmuxN atomic.Int64

// openTerminal runs argv with exactly env (nothing inherited) in cwd, in a
// fresh 160×45 tmux window. The test ends only once the CLI's whole
// process tree has exited (see procSet).
func openTerminal(t *testing.T, cwd string, env []string, argv ...string) *terminal {
	t.Helper()
	term := &terminal{t: t, socket: fmt.Sprintf("abl-%d-%d", time.Now().UnixNano()%1e9, tmuxN.Add(1)), procs: newProcSet()}
	cmd := append([]string{"env", "-i"}, env...)
	cmd = append(cmd, term.procs.env)
	cmd = append(cmd, argv...)
	quoted := make([]string, len(cmd))
	for i, a := range cmd {
		quoted[i] = shellQuote(a)
	}
	// Keep the pane after the CLI exits, so its last screen can be read:
	// set before the pane exists, so that a CLI that exits at once keeps
	// it too.
	args := []string{"start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-x", "160", "-y", "45", "-c", cwd, strings.Join(quoted, " ")}
	if out, err := term.tmux(args...); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(term.close)
	// tmux makes the pane's process a session leader: everything it starts
	// is in its session unless it leaves it (then the marker finds it).
	term.procs.sids = []int{term.PID()}
	return term
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (term *terminal) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", term.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

// close ends the tmux server (the pane's process group gets SIGHUP), asks
// the CLI's other processes to end too (SIGTERM: a daemon it started in a
// session of its own gets no hangup), and waits until every one of them
// has exited, so that nothing writes into the test's directories after
// the test.
func (term *terminal) close() {
	term.tmux("kill-server")
	term.procs.signal(syscall.SIGTERM)
	term.procs.await(term.t, 30*time.Second)
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
	deadline := time.Now().Add(slow(timeout))
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

// awaitExit waits for the pane's process pid to exit after it was told
// to quit (an event on its pidfd, with a bound only for a CLI that never
// quits).
func (term *terminal) awaitExit(pid int) {
	term.t.Helper()
	if len(awaitExit([]int{pid}, 2*time.Minute)) > 0 {
		term.t.Fatalf("the CLI did not quit:\n%s", term.Screen())
	}
}
