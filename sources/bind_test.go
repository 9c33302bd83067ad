package sources

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// pidLines maps lines "<session> start <pid> [<occurredAt ms>]" and
// "<session> bind <pid>" to session.started and BindPID.
type pidLines struct{ *Sessions }

func (h pidLines) Line(_ string, line []byte) {
	f := strings.Fields(string(line))
	if len(f) < 3 {
		h.BadLine(CodeInvalidRecord)
		return
	}
	pid, _ := strconv.Atoi(f[2])
	switch f[1] {
	case "start":
		e := agentbridge.Event{Kind: agentbridge.KindSessionStarted, PID: pid}
		if len(f) == 4 {
			e.OccurredAt, _ = strconv.ParseInt(f[3], 10, 64)
		}
		h.Event(f[0], "a", e)
	case "bind":
		h.BindPID(f[0], pid)
	case "hold": // "<session> hold <journal>"
		if h.Event(f[0], "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted}) {
			h.BindHolder(f[0], f[2])
		}
	default:
		h.BadLine(CodeInvalidRecord)
	}
}
func (h pidLines) Truncated(string) {}
func (h pidLines) Removed(string)   {}

func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		testenv.Missing(t, "cannot start a child process: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// TestBindPIDAfterExit: a session whose process exited is taken up by a
// new live process, either by a new session.started with its pid or by
// BindPID alone: it comes back (idle, the new pid, never removed), its
// linger is cancelled, and the new process's exit is observed. A pid that
// is no longer alive, or names a process younger than the session's
// start (pid reuse), leaves it exited.
func TestBindPIDAfterExit(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"start", "bind"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := filepath.Join(dir, "s.jsonl")
			h := sourcestest.New()
			var ss *Sessions
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			// A long linger: a timer that fired would remove the session
			// only much later, so the test looks at the timer itself.
			go func() {
				done <- Follow(ctx, hub.Start{Enabled: []string{"a"}, Publisher: h},
					FollowConfig{Tail: TailConfig{Roots: []string{dir}}, Linger: time.Hour},
					func(s *Sessions) Handler { ss = s; return pidLines{s} })
			}()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Follow = %v", err)
				}
			})
			status := func(want agentbridge.Status, pid int) func(h *sourcestest.Hub) bool {
				return func(h *sourcestest.Hub) bool {
					s, ok := h.Shown("s1")
					return ok && s.Status == want && (pid == 0 || s.PID == pid)
				}
			}
			// inspect runs f on the source's goroutine and waits for it.
			inspect := func(f func(en *entry)) {
				t.Helper()
				ran := make(chan struct{})
				h.WaitFor(t, "the source to start", func(*sourcestest.Hub) bool { return h.Resets() > 0 })
				ss.Post(func() { f(ss.m["s1"]); close(ran) })
				select {
				case <-ran:
				case <-time.After(10 * time.Second):
					t.Fatal("posted function did not run")
				}
			}

			p1 := sleeper(t)
			sourcestest.Append(t, p, fmt.Sprintf("s1 start %d %d\n", p1.Process.Pid, time.Now().UnixMilli()))
			h.WaitFor(t, "bound to the first process", status(agentbridge.StatusIdle, p1.Process.Pid))
			_ = p1.Process.Kill()
			h.WaitFor(t, "the first process's exit", status(sourcestest.StatusExited, 0))

			// A dead pid does not take the session up.
			dead := exec.Command("true")
			if err := dead.Run(); err != nil {
				testenv.Missing(t, "cannot run a child process: %v", err)
			}
			sourcestest.Append(t, p, fmt.Sprintf("s1 bind %d\n", dead.Process.Pid))

			p2 := sleeper(t)
			if how == "start" {
				sourcestest.Append(t, p, fmt.Sprintf("s1 start %d %d\n", p2.Process.Pid, time.Now().UnixMilli()))
			} else {
				sourcestest.Append(t, p, fmt.Sprintf("s1 bind %d\n", p2.Process.Pid))
			}
			h.WaitFor(t, "taken up by the second process", status(agentbridge.StatusIdle, p2.Process.Pid))
			inspect(func(en *entry) {
				if en == nil {
					t.Fatal("session forgotten")
				}
				if en.timer != nil || !en.exitedAt.IsZero() {
					t.Errorf("the exited session's linger still runs after a new process took it up")
				}
				if en.unwatch == nil || en.pid != p2.Process.Pid {
					t.Errorf("the new process is not watched (pid %d)", en.pid)
				}
				if len(ss.timers) != 0 {
					t.Errorf("%d timers armed for a session bound to a live process", len(ss.timers))
				}
			})
			for _, c := range h.Calls() {
				if c.Op == agentbridge.OpRemove || c.Event.Kind == agentbridge.KindSessionStopped {
					t.Errorf("the session was removed (%+v); want the same session taken up", c)
				}
			}

			_ = p2.Process.Kill()
			h.WaitFor(t, "the second process's exit", status(sourcestest.StatusExited, 0))
			inspect(func(en *entry) {
				if en == nil || en.timer == nil {
					t.Errorf("no linger after the second exit")
				}
			})

			// A pid younger than the session's start is a reused one.
			p3 := sleeper(t)
			sourcestest.Append(t, p, fmt.Sprintf("s1 start %d %d\n", p3.Process.Pid, time.Now().Add(-time.Hour).UnixMilli()))
			h.WaitFor(t, "a reused pid: exited", func(h *sourcestest.Hub) bool {
				s, ok := h.Shown("s1")
				return ok && s.Status == sourcestest.StatusExited && s.PID == p3.Process.Pid
			})
			inspect(func(en *entry) {
				if en.unwatch != nil {
					t.Errorf("a reused pid is watched")
				}
			})
		})
	}
}

// TestBindHolderOnlyTheAgentsWriter: of the processes holding a journal
// open, BindHolder takes only the one writing it that FollowConfig.Agent
// names: a journal held by readers alone (tail -f, less) stays unbound,
// and their exit changes nothing.
func TestBindHolderOnlyTheAgentsWriter(t *testing.T) {
	dir := t.TempDir()
	ctl := filepath.Join(dir, "ctl.jsonl")
	readOnly := filepath.Join(dir, "read.log")
	written := filepath.Join(dir, "written.log")
	for _, p := range []string{ctl, readOnly, written} {
		sourcestest.Append(t, p, "")
	}
	// One reader, named like the agent: alone it would pass for the holder.
	readers := []*exec.Cmd{proctest.Hold(t, "agentx", readOnly, proctest.Read)}
	proctest.Hold(t, "", written, proctest.Write) // a writer that is not the agent
	writer := proctest.Hold(t, "agentx", written, proctest.Write)

	h := sourcestest.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, hub.Start{Enabled: []string{"a"}, Publisher: h},
			FollowConfig{Tail: TailConfig{Roots: []string{dir}}, Agent: proc.Agent{Names: []string{"agentx"}}},
			func(s *Sessions) Handler { return pidLines{s} })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Follow = %v", err)
		}
	})
	h.WaitFor(t, "the source to start", func(*sourcestest.Hub) bool { return h.Resets() > 0 })
	sourcestest.Append(t, ctl, "r hold "+readOnly+"\nw hold "+written+"\n")
	h.WaitFor(t, "bound to the agent's writer", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown("w")
		return ok && s.PID == writer.Process.Pid
	})
	for _, c := range readers {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	sourcestest.Append(t, ctl, "mark start 0\n") // a line read after the readers' exit
	h.WaitFor(t, "the line after", func(h *sourcestest.Hub) bool { _, ok := h.Shown("mark"); return ok })
	if s, _ := h.Shown("r"); s.PID != 0 || s.Status == sourcestest.StatusExited {
		t.Errorf("journal held only by readers: pid %d, status %s; want unbound and not exited", s.PID, s.Status)
	}
}

// restartLines is pidLines whose journal, when read again, restarts its
// session (as every source's Truncated does), with one more line:
// "<session> title <title>".
type restartLines struct{ pidLines }

func (h restartLines) Line(path string, line []byte) {
	if f := strings.Fields(string(line)); len(f) == 3 && f[1] == "title" {
		h.Event(f[0], "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: f[2]})
		return
	}
	h.pidLines.Line(path, line)
}

func (h restartLines) Truncated(path string) {
	h.Restart(strings.TrimSuffix(filepath.Base(path), ".jsonl"))
}

// TestRestartKeepsProcess: a journal rewritten under a live agent (an undo
// that names no pid again) rebuilds its session with the process still on
// it, and the process's exit is still observed.
func TestRestartKeepsProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "s1.jsonl")
	h := sourcestest.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, hub.Start{Enabled: []string{"a"}, Publisher: h},
			FollowConfig{Tail: TailConfig{Roots: []string{dir}}, Linger: time.Hour},
			func(s *Sessions) Handler { return restartLines{pidLines{s}} })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Follow = %v", err)
		}
	})
	session := func(title string, status agentbridge.Status) func(h *sourcestest.Hub) bool {
		return func(h *sourcestest.Hub) bool {
			s, ok := h.Shown("s1")
			return ok && s.Title == title && s.Status == status
		}
	}
	cmd := sleeper(t)
	pid := cmd.Process.Pid
	sourcestest.Append(t, p, fmt.Sprintf("s1 start %d %d\ns1 title first\n", pid, time.Now().UnixMilli()))
	h.WaitFor(t, "bound to the process", session("first", agentbridge.StatusIdle))
	// Rewritten in place, shorter, without the pid.
	if err := os.WriteFile(p, []byte("s1 title again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the rebuilt session", session("again", agentbridge.StatusIdle))
	if s, _ := h.Shown("s1"); s.PID != pid {
		t.Fatalf("after the rewrite: pid %d, want %d (the process is still bound)", s.PID, pid)
	}
	_ = cmd.Process.Kill()
	h.WaitFor(t, "the process's exit", session("again", sourcestest.StatusExited))
}
