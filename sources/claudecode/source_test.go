package claudecode

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

func TestInfo(t *testing.T) {
	withReg := t.TempDir()
	if err := os.Mkdir(filepath.Join(withReg, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		waiting   agentbridge.Observation
	}{
		{"registry present", withReg, agentbridge.Observed},
		{"no registry (older Claude Code)", t.TempDir(), agentbridge.Inferred},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := New(Options{Home: tc.dir}).Info()
			if info.ID != "claude-code" || info.DisplayName != "Claude Code" {
				t.Errorf("id/name %q %q", info.ID, info.DisplayName)
			}
			if len(info.Harnesses) != 1 || info.Harnesses[0] != (agentbridge.Harness{ID: "claude-code", DisplayName: "Claude Code"}) {
				t.Errorf("harnesses %+v", info.Harnesses)
			}
			if !slices.Equal(info.EnvironmentVariables, []string{"CLAUDE_CONFIG_DIR"}) {
				t.Errorf("env %v", info.EnvironmentVariables)
			}
			want := map[string]agentbridge.Observation{"waiting": tc.waiting, "exited": agentbridge.Observed, "subagents": agentbridge.Observed}
			for k, v := range want {
				if info.Observes[k].How != v {
					t.Errorf("observes[%s] = %q, want %q", k, info.Observes[k].How, v)
				}
			}
		})
	}
}

func TestDefaultConfigDir(t *testing.T) {
	t.Setenv("CLAUDE_CONFIG_DIR", "/opt/claude")
	if d, err := DefaultConfigDir(); err != nil || d != "/opt/claude" {
		t.Errorf("with CLAUDE_CONFIG_DIR: %q %v", d, err)
	}
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("HOME", "/home/someone")
	if d, err := DefaultConfigDir(); err != nil || d != "/home/someone/.claude" {
		t.Errorf("default: %q %v", d, err)
	}
}

// TestClearFollowsPID: /clear (or /resume) rewrites the registry's
// sessionId; the process's live state moves to the new transcript and the
// session it left is removed.
func TestClearFollowsPID(t *testing.T) {
	e := startLive(t, nil)
	p := helper(t)
	pid := p.Process.Pid
	const a, b = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	e.registry(pid, a, "idle", "", 1)
	e.append(filepath.Join("projects", "-work-proj", a+".jsonl"), prompt(a, 1, "p-a", "first"), reply(a, 2, "ok", "end_turn"))
	e.view.waitFor(t, "first session", a, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && s.Status == sourcestest.StatusDone && s.PID == pid
	})

	e.registry(pid, b, "idle", "", 2)
	e.view.waitFor(t, "old session removed", a, func(_ agentbridge.Snapshot, found bool) bool { return !found })
	s := e.view.waitFor(t, "new session bound", b, status(agentbridge.StatusIdle))
	if s.PID != pid {
		t.Errorf("new session pid %d, want %d", s.PID, pid)
	}
	e.append(filepath.Join("projects", "-work-proj", b+".jsonl"), prompt(b, 3, "p-b", "second"))
	s = e.view.waitFor(t, "new transcript", b, status(agentbridge.StatusRunning))
	if s.PID != pid || s.Title != "second" {
		t.Errorf("new session %+v", s)
	}
}

// TestRegistryRemovedExits: a clean exit removes the registry file.
func TestRegistryRemovedExits(t *testing.T) {
	e := startLive(t, nil)
	p := helper(t)
	pid := p.Process.Pid
	const sid = "cccccccc-0000-4000-8000-000000000003"
	e.registry(pid, sid, "busy", "", 1)
	e.append(filepath.Join("projects", "-work-proj", sid+".jsonl"), prompt(sid, 1, "p", "go"),
		toolUse(sid, 2, "toolu_x", "Agent", `{"description":"helper","subagent_type":"Explore"}`))
	e.view.waitFor(t, "running with a subagent", sid, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && s.Status == agentbridge.StatusRunning && len(s.Subagents) == 1
	})
	if err := os.Remove(filepath.Join(e.dir, "sessions", fmt.Sprintf("%d.json", pid))); err != nil {
		t.Fatal(err)
	}
	s := e.view.waitFor(t, "registry removed", sid, status(sourcestest.StatusExited))
	if s.Subagents[0].Status != agentbridge.SubagentCancelled {
		t.Errorf("subagent %q after exit, want cancelled", s.Subagents[0].Status)
	}
}

// TestKilledThenRegistryRemoved: the bridge saw the process end through
// its pidfd (a killed claude leaves its registry file); the registry file
// removed later says the same end again, which folds no second
// agent.exited (the session's end keeps its time).
func TestKilledThenRegistryRemoved(t *testing.T) {
	e := startLive(t, nil)
	const sid = "cececece-0000-4000-8000-000000000009"
	path, pid := e.killedMidTurn(t, sid, prompt(sid, 1, "p", "go"))
	if err := os.Remove(filepath.Join(e.dir, "sessions", fmt.Sprintf("%d.json", pid))); err != nil {
		t.Fatal(err)
	}
	e.append(path, rec(sid, 2, "custom-title", `"customTitle":"after the removal"`))
	e.view.waitFor(t, "a later line", sid, func(s agentbridge.Snapshot, ok bool) bool { return ok && s.Title == "after the removal" })
	e.view.mu.Lock()
	exits := 0
	for _, k := range e.view.kinds {
		if k == agentbridge.KindAgentExited {
			exits++
		}
	}
	e.view.mu.Unlock()
	if exits != 1 {
		t.Errorf("%d agent.exited; want 1", exits)
	}
}

// TestStartupScan: at start only recent transcripts and those of live
// processes are read; a session no live process writes is reported exited
// (and dropped when it ended long ago); subagent transcripts never become
// root sessions; the bridge then sleeps (no wake-up without a change).
func TestStartupScan(t *testing.T) {
	p := helper(t)
	pid := p.Process.Pid
	const live, old, recent, dead = "11111111-0000-4000-8000-00000000000a", "22222222-0000-4000-8000-00000000000b",
		"33333333-0000-4000-8000-00000000000c", "44444444-0000-4000-8000-00000000000d"
	longAgo := time.Now().Add(-30 * 24 * time.Hour)
	now := time.Now()
	var src *Source
	e := startLiveWith(t, func(dir string) {
		proj := filepath.Join(dir, "projects", "-work-proj")
		write := func(name string, mtime time.Time, lines ...string) {
			p := filepath.Join(proj, name)
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			var b []byte
			for _, l := range lines {
				b = append(b, l+"\n"...)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
		// A live process writes an old transcript (a resumed session).
		write(live+".jsonl", longAgo, prompt(live, 1, "p1", "resumed work"))
		// Many old transcripts of finished sessions: never opened.
		for i := range 50 {
			write(fmt.Sprintf("%08d-0000-4000-8000-000000000000.jsonl", i), longAgo, prompt("x", 1, "p", "old"))
		}
		write(old+".jsonl", longAgo, prompt(old, 1, "p", "old"))
		// A recent transcript whose process is gone, last written now.
		write(recent+".jsonl", now, rec(recent, 1, "user", fmt.Sprintf(`"timestamp":%q,"message":{"role":"user","content":"just now"}`, now.UTC().Format(time.RFC3339Nano))))
		// A recent file whose last record is from long ago: exited long ago.
		write(dead+".jsonl", now, prompt(dead, 1, "p", "ancient"))
		// Subagent transcripts, both layouts, are never root sessions.
		write(filepath.Join(recent, "subagents", "agent-abc.jsonl"), now, rec(recent, 2, "user", `"isSidechain":true,"agentId":"abc","message":{"role":"user","content":"sub"}`))
		write("agent-5f1e2d3c.jsonl", now, rec(recent, 3, "user", `"isSidechain":true,"message":{"role":"user","content":"sub"}`))
		b := fmt.Sprintf(`{"pid":%d,"sessionId":%q,"cwd":"/work/proj","startedAt":%d,"status":"busy"}`, pid, live, time.Now().Add(-time.Second).UnixMilli())
		if err := os.WriteFile(filepath.Join(dir, "sessions", fmt.Sprintf("%d.json", pid)), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}, &src)

	s := e.view.waitFor(t, "live old transcript", live, status(agentbridge.StatusRunning))
	if s.PID != pid || s.Title != "resumed work" {
		t.Errorf("live session %+v", s)
	}
	s = e.view.waitFor(t, "recent transcript without a process", recent, status(sourcestest.StatusExited))
	if s.PID != 0 {
		t.Errorf("exited session has pid %d", s.PID)
	}
	if len(s.Subagents) != 1 || s.Subagents[0].ID != "agent-abc" || s.Subagents[0].Status != agentbridge.SubagentCancelled {
		t.Errorf("subagent of the exited session: %+v, want agent-abc cancelled", s.Subagents)
	}
	e.view.mu.Lock()
	var ids []string
	for _, en := range e.view.state.Sessions() {
		ids = append(ids, en.Snapshot.ID)
	}
	e.view.mu.Unlock()
	slices.Sort(ids)
	if want := []string{live, recent}; !slices.Equal(ids, want) {
		t.Errorf("sessions after the scan: %v, want %v", ids, want)
	}
	tl := src.Tailer()
	if n := tl.Opens(); n > 6 {
		t.Errorf("the scan opened %d transcripts; old ones must only be stat'ed", n)
	}
	// Let the start settle (the registry's first read), then
	// watch a quiet interval.
	before := tl.Wakes()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		n := tl.Wakes()
		if n == before {
			break
		}
		before = n
	}
	time.Sleep(300 * time.Millisecond)
	if after := tl.Wakes(); after != before {
		t.Errorf("the source woke %d times while nothing changed", after-before)
	}
}

// TestHarnessSwitch: switching the harness off empties the source and
// releases its watches; on again reports the live sessions again.
func TestHarnessSwitch(t *testing.T) {
	e := startLive(t, nil)
	const sid = "dddddddd-0000-4000-8000-000000000004"
	now := time.Now().UTC().Format(time.RFC3339Nano)
	e.append(filepath.Join("projects", "-p", sid+".jsonl"), rec(sid, 1, "user", fmt.Sprintf(`"timestamp":%q,"message":{"role":"user","content":"hello"}`, now)))
	e.view.waitFor(t, "session seen", sid, func(_ agentbridge.Snapshot, ok bool) bool { return ok })
	// A second session, bound to a live process through the registry.
	const bound = "dddddddd-0000-4000-8000-00000000000b"
	p := helper(t)
	e.registry(p.Process.Pid, bound, "busy", "", 1)
	e.append(filepath.Join("projects", "-p", bound+".jsonl"), prompt(bound, 1, "p", "work"))
	e.view.waitFor(t, "bound session running", bound, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && s.Status == agentbridge.StatusRunning && s.PID == p.Process.Pid
	})
	if _, err := e.hub.SetHarness(SourceID, Harness, false); err != nil {
		t.Fatal(err)
	}
	e.view.waitFor(t, "switched off", sid, func(_ agentbridge.Snapshot, ok bool) bool { return !ok })
	e.view.waitFor(t, "switched off", bound, func(_ agentbridge.Snapshot, ok bool) bool { return !ok })
	if _, err := e.hub.SetHarness(SourceID, Harness, true); err != nil {
		t.Fatal(err)
	}
	e.view.waitFor(t, "switched on", sid, func(_ agentbridge.Snapshot, ok bool) bool { return ok })
	// The live process's session comes back as it is: never reported
	// exited on the way.
	e.view.waitFor(t, "bound session back", bound, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && s.Status == agentbridge.StatusRunning && s.PID == p.Process.Pid
	})
	e.view.mu.Lock()
	kinds := slices.Clone(e.view.kinds)
	e.view.mu.Unlock()
	if slices.Contains(kinds, agentbridge.KindAgentExited) {
		t.Errorf("a live session was reported exited across the switch (events %v)", kinds)
	}
}

// TestResumeAfterExit: a session whose process exited is taken up by a new
// process (claude --resume): the same session (never stopped, so its
// linger cannot remove it while it is live) is bound to the new process,
// whose death is observed again.
func TestResumeAfterExit(t *testing.T) {
	e := startLive(t, nil)
	p1 := helper(t)
	const sid = "eeeeeeee-0000-4000-8000-000000000005"
	e.registry(p1.Process.Pid, sid, "idle", "", 1)
	e.append(filepath.Join("projects", "-work-proj", sid+".jsonl"), prompt(sid, 1, "p", "hello"), reply(sid, 2, "hi", "end_turn"))
	e.view.waitFor(t, "first process", sid, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && s.Status == sourcestest.StatusDone && s.PID == p1.Process.Pid
	})
	if err := os.Remove(filepath.Join(e.dir, "sessions", fmt.Sprintf("%d.json", p1.Process.Pid))); err != nil {
		t.Fatal(err)
	}
	e.view.waitFor(t, "first process exits", sid, status(sourcestest.StatusExited))

	p2 := helper(t)
	e.registry(p2.Process.Pid, sid, "idle", "", 2)
	s := e.view.waitFor(t, "resumed", sid, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && s.Status == sourcestest.StatusDone && s.PID == p2.Process.Pid // idle, its last turn kept, no end
	})
	if s.Title != "hello" {
		t.Errorf("resumed session title %q", s.Title)
	}
	e.view.mu.Lock()
	stopped := slices.Contains(e.view.kinds, agentbridge.KindSessionStopped)
	e.view.mu.Unlock()
	if stopped {
		t.Errorf("the resumed session was stopped and started again; want the same session bound to the new process")
	}
	e.append(filepath.Join("projects", "-work-proj", sid+".jsonl"), prompt(sid, 3, "p2", "again"))
	e.view.waitFor(t, "resumed turn", sid, status(agentbridge.StatusRunning))
	if err := p2.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	e.view.waitFor(t, "second process killed", sid, status(sourcestest.StatusExited))
}

// TestResumeMidTurnAfterKill: a process killed in the middle of a turn
// (the bridge sees it end through its pidfd; it leaves its registry file)
// and a new process that takes the session up (claude --resume) before
// any line is read: the dead process's turn is over, so the new process's
// first reply, with no prompt before it, opens a turn of its own instead
// of going on with the dead one.
func TestResumeMidTurnAfterKill(t *testing.T) {
	e := startLive(t, nil)
	const sid = "cdcdcdcd-0000-4000-8000-000000000008"
	path, _ := e.killedMidTurn(t, sid, prompt(sid, 1, "p", "go"), toolUse(sid, 2, "toolu_a", "Bash", `{"command":"ls"}`))
	p2 := helper(t)
	e.registry(p2.Process.Pid, sid, "busy", "", 2)
	e.view.waitFor(t, "resumed", sid, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && s.PID == p2.Process.Pid && s.Status == agentbridge.StatusIdle
	})
	e.append(path, toolUse(sid, 5, "toolu_b", "Read", `{"file_path":"/work/proj/a"}`))
	e.view.waitFor(t, "the new process's reply", sid, func(s agentbridge.Snapshot, ok bool) bool { return ok && s.Tool == "Read" })
	e.view.mu.Lock()
	turns := e.view.turns[sid]
	e.view.mu.Unlock()
	if turns != 2 {
		t.Errorf("%d turns started; want 2: the dead process's and the new process's own", turns)
	}
}

// TestOwnSubagentTranscript: a 2.1.2+ subagent transcript that no parent
// tool names (no toolUseId in its sidecar, no open Agent tool) is shown as
// a subagent of its own and ends with its transcript's turn.
func TestOwnSubagentTranscript(t *testing.T) {
	e := startLive(t, nil)
	const sid = "ffffffff-0000-4000-8000-000000000006"
	e.append(filepath.Join("projects", "-w", sid+".jsonl"), prompt(sid, 1, "p", "work"), reply(sid, 2, "done", "end_turn"))
	e.view.waitFor(t, "parent", sid, status(sourcestest.StatusDone))
	sub := filepath.Join("projects", "-w", sid, "subagents")
	e.write(filepath.Join(sub, "agent-q1.meta.json"), `{"agentType":"general-purpose","description":"Background check"}`)
	e.append(filepath.Join(sub, "agent-q1.jsonl"), rec(sid, 3, "user", `"isSidechain":true,"agentId":"q1","message":{"role":"user","content":"check"}`))
	s := e.view.waitFor(t, "own subagent", sid, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentRunning
	})
	if s.Subagents[0].ID != "agent-q1" || s.Subagents[0].Type != "general-purpose" || s.Subagents[0].Title != "Background check" {
		t.Errorf("subagent %+v", s.Subagents[0])
	}
	e.append(filepath.Join(sub, "agent-q1.jsonl"), rec(sid, 4, "assistant", `"isSidechain":true,"agentId":"q1","message":{"model":"claude-haiku-4-5","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`))
	e.view.waitFor(t, "own subagent ends", sid, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentCompleted
	})
}

// TestPIDReuse: a registry file left by a crashed claude whose pid now
// names a younger, unrelated process is not taken as live.
func TestPIDReuse(t *testing.T) {
	e := startLive(t, nil)
	p := helper(t)
	pid := p.Process.Pid
	const sid = "99999999-0000-4000-8000-000000000007"
	stale := fmt.Sprintf(`{"pid":%d,"sessionId":%q,"cwd":"/work/proj","startedAt":%d,"status":"busy"}`, pid, sid, time.Now().Add(-time.Hour).UnixMilli())
	e.write(filepath.Join("sessions", fmt.Sprintf("%d.json", pid)), stale)
	e.view.waitFor(t, "stale registry entry", sid, status(sourcestest.StatusExited))
}

// TestMalformedLineDiagnostic: a transcript line that is not JSON is
// skipped with a typed diagnostic that names no path and quotes nothing;
// the lines after it are read as usual.
func TestMalformedLineDiagnostic(t *testing.T) {
	e := startLive(t, nil)
	const sid = "88888888-0000-4000-8000-000000000008"
	e.append(filepath.Join("projects", "-w", sid+".jsonl"), `{"type":"user","secret-ish /home/alice/x`, prompt(sid, 1, "p", "after the bad line"))
	e.view.waitFor(t, "line after the bad one", sid, status(agentbridge.StatusRunning))
	deadline := time.After(10 * time.Second)
	for {
		e.view.mu.Lock()
		diags := append([]agentbridge.Diagnostic(nil), e.view.diags...)
		e.view.mu.Unlock()
		for _, d := range diags {
			if d.Code == "invalid-json" {
				if strings.Contains(d.Message, "/") || strings.Contains(d.Message, "alice") {
					t.Errorf("diagnostic leaks: %q", d.Message)
				}
				return
			}
		}
		select {
		case <-e.view.changed:
		case <-deadline:
			t.Fatalf("no invalid-json diagnostic; got %+v", diags)
		}
	}
}

// TestHomeAppearsLater: with no Claude Code home at start, the source
// waits (watching the nearest existing ancestor, no polling) and follows
// the transcripts and the registry once they appear, even when the
// registry directory is created after its parent.
func TestHomeAppearsLater(t *testing.T) {
	e := startLive(t, func(dir string) {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	})
	const sid = "77777777-0000-4000-8000-00000000000e"
	if err := os.Mkdir(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.append(filepath.Join("projects", "-work-proj", sid+".jsonl"), prompt(sid, 1, "p", "hello"))
	e.view.waitFor(t, "transcript followed", sid, status(agentbridge.StatusRunning))
	p := helper(t)
	e.registry(p.Process.Pid, sid, "waiting", "approve Bash", 1)
	s := e.view.waitFor(t, "registry followed", sid, status(agentbridge.StatusWaiting))
	if s.PID != p.Process.Pid || s.WaitingFor != "approve Bash" {
		t.Errorf("session %+v, want pid %d waiting for approve Bash", s, p.Process.Pid)
	}
}

// TestTailAfterTheProcessDied: the bridge sees the process die (its
// pidfd; a killed claude leaves its registry file) before it reads the
// transcript's last lines, which the process wrote before it died. They
// still tell how its turn went (a tool ran, the turn completed), and the
// session then ends exited again, not idle with no process (the mapper
// reads the end the bridge folded from the fold's view).
func TestTailAfterTheProcessDied(t *testing.T) {
	e := startLive(t, nil)
	const sid = "abababab-0000-4000-8000-000000000007"
	path, _ := e.killedMidTurn(t, sid, prompt(sid, 1, "p", "go"))
	e.append(path, toolUse(sid, 2, "toolu_a", "Bash", `{"command":"ls"}`), toolResult(sid, 3, "toolu_a", "ok", false, ""),
		reply(sid, 4, "done", "end_turn"))
	e.view.waitFor(t, "the tail read", sid, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && s.LastTurn == agentbridge.LastTurnCompleted
	})
	// One more line, in a later read: the tail's batch is over by then.
	e.append(path, rec(sid, 5, "custom-title", `"customTitle":"tail read"`))
	s := e.view.waitFor(t, "a later line", sid, func(s agentbridge.Snapshot, ok bool) bool { return ok && s.Title == "tail read" })
	if s.Status != sourcestest.StatusExited || s.Tool != "" {
		t.Errorf("after the tail: status %q, tool %q; want exited, none", s.Status, s.Tool)
	}
}

// killedMidTurn starts a stand-in claude bound to session sid (its
// registry says busy), appends lines to its transcript, waits for the
// session running, kills the process (which leaves its registry file) and
// waits for the session exited. It returns the transcript's path and the
// process's pid.
func (e *liveEnv) killedMidTurn(t *testing.T, sid string, lines ...string) (path string, pid int) {
	t.Helper()
	p := helper(t)
	path = filepath.Join("projects", "-work-proj", sid+".jsonl")
	e.registry(p.Process.Pid, sid, "busy", "", 1)
	e.append(path, lines...)
	e.view.waitFor(t, "running", sid, status(agentbridge.StatusRunning))
	if err := p.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	e.view.waitFor(t, "killed", sid, status(sourcestest.StatusExited))
	return path, p.Process.Pid
}
