package codex

import (
	"bufio"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// daemonLike is a process that holds a rollout open for writing, as the
// Codex app-server daemon does, and closes it (without exiting) when told.
type daemonLike struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startDaemonLike(t *testing.T, path string) *daemonLike {
	t.Helper()
	// A shell named codex, so that the source's agent matcher takes it for
	// Codex's process.
	sh, err := exec.LookPath("sh")
	if err != nil {
		testenv.Missing(t, "needs sh")
	}
	data, err := os.ReadFile(sh)
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	bin := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", `exec 3>>"$0"; echo held; read x; exec 3>&-; echo closed; exec sleep 600`, path)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd = proctest.Start(t, cmd) // retries a fresh copy that is still busy
	inR.Close()
	outW.Close()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	d := &daemonLike{cmd: cmd, stdin: inW, out: bufio.NewReader(outR)}
	d.expect(t, "held")
	return d
}

func (d *daemonLike) expect(t *testing.T, want string) {
	t.Helper()
	line, err := d.out.ReadString('\n')
	if err != nil || line != want+"\n" {
		t.Fatalf("helper said %q (%v), want %q", line, err, want)
	}
}

// TestDaemonClosesRollout: the session of a rollout whose last writer
// closes it ends then, while that process (the daemon) lives on; a later
// writer taking the rollout up again brings the same session back.
func TestDaemonClosesRollout(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		testenv.Missing(t, "needs sh")
	}
	home := t.TempDir()
	st := startStream(t, New(Options{Home: home, Linger: -1, Logger: slog.New(slog.DiscardHandler)}))

	const id = "019f6400-0000-7000-8000-000000000001"
	path := filepath.Join(home, "sessions", "2026", "12", "01", "rollout-2026-12-01T09-00-00-"+id+".jsonl")
	r := createRollout(t, path)
	daemon := startDaemonLike(t, path)
	r.add(`"type":"session_meta","payload":{"id":"`+id+`","cwd":"/srv/x","source":"cli"}`,
		`"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}`,
		`"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"ok"}`)
	st.waitFor(t, "done, bound to the daemon", func(m map[string]agentbridge.Snapshot) bool {
		s, ok := m[id]
		return ok && s.Status == sourcestest.StatusDone && s.PID == daemon.cmd.Process.Pid
	})

	// The daemon unloads the thread: it closes the rollout and lives on.
	daemon.stdin.Write([]byte("go\n"))
	daemon.expect(t, "closed")
	closedAt := time.Now()
	st.waitFor(t, "exited once the daemon closed the rollout", func(m map[string]agentbridge.Snapshot) bool {
		s := m[id]
		return s.Status == sourcestest.StatusExited && s.LastTurn == agentbridge.LastTurnCompleted
	})
	t.Logf("the end showed %v after the close", time.Since(closedAt)) // waitFor bounds it
	if daemon.cmd.ProcessState != nil {
		t.Fatal("the daemon-like helper exited; the test needs it alive")
	}

	// A client takes the thread up again: the daemon reopens the rollout.
	again := startDaemonLike(t, path)
	r.add(`"type":"event_msg","payload":{"type":"task_started","turn_id":"t2"}`)
	st.waitFor(t, "running again under the process holding it now", func(m map[string]agentbridge.Snapshot) bool {
		s, ok := m[id]
		return ok && s.Status == agentbridge.StatusRunning && s.PID == again.cmd.Process.Pid
	})
}
