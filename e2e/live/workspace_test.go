package live

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTwoAgentsOneWorkspace runs Claude Code and Codex (without its
// daemon) side by side in one project directory, under one home watched
// by one bridge, with turns that overlap: Claude Code's turn is held open
// while Codex answers. Each agent's session shows its own turns only,
// bound to its own process, and one ending leaves the other as it is.
func TestTwoAgentsOneWorkspace(t *testing.T) {
	enabled(t)
	claude, codex := claudeCLIs[0], codexCLIs[0]
	const row = "two agents, one cwd"
	scenario(t, claude.Label(), row, func(t *testing.T) {
		cx := newCodexRig(t, codex, false)
		cl := &claudeRig{t: t, cli: claude, bin: install(t, claude), home: cx.home, cwd: cx.cwd, bridge: cx.bridge}
		cl.config = filepath.Join(cl.home, ".claude")
		if err := os.MkdirAll(cl.config, 0o700); err != nil {
			t.Fatal(err)
		}
		cl.seed()
		keepHome(t, cl.config)
		cl.model = newModelServer(t, messagesAPI{})
		gate := make(chan struct{})
		cl.model.Script(Step{When: "alpha", Gate: gate, Text: "Alpha answer."})
		cx.model.Script(Step{When: "beta", Text: "Beta answer."})

		a := cl.tui()
		b := cx.tui()
		prompt(a, "alpha")
		sa := cl.session(60*time.Second, func(s snapshot) bool { return s.Status == "running" && s.PID == a.PID() })
		prompt(b, "beta")
		b.AwaitScreen(60*time.Second, "Beta answer.")
		sb := cx.session(20*time.Second, func(s snapshot) bool { return s.Status == "done" })
		sa, _ = cl.bridge.Session(claudeSource, sa.ID)
		cx.checkf(sa.Status == "running" && sb.PID == b.PID() && sa.Cwd == cx.cwd && sb.Cwd == cx.cwd && sb.LastTurn == "completed",
			"while Claude Code works, Codex answered: claude %s, codex %s", sa, sb)

		close(gate)
		a.AwaitScreen(60*time.Second, "Alpha answer.")
		sa = cl.bridge.AwaitStatus(claudeSource, sa.ID, "done", 20*time.Second)
		quit(b, "/exit")
		sb = cx.bridge.AwaitStatus(codexSource, sb.ID, "exited", 20*time.Second)
		sa, _ = cl.bridge.Session(claudeSource, sa.ID)
		// Codex titles its thread with a model call of its own (the scripted
		// server's title); it must never be the other agent's prompt.
		cx.checkf(sa.Status == "done" && sa.PID == a.PID() && sa.LastTurn == "completed" && sa.Title == "alpha" && sb.Title != "alpha",
			"Codex quit, Claude Code as it was: claude %s, codex %s", sa, sb)
		for _, src := range []string{claudeSource, codexSource} {
			ss := cx.bridge.Sessions(src)
			cx.checkf(len(ss) == 1, "%s: one session, got %v", src, ss)
		}
		ha, hb := cx.bridge.History(claudeSource, sa.ID), cx.bridge.History(codexSource, sb.ID)
		cx.checkf((equal(ha, []string{"idle", "running", "done"}) || equal(ha, []string{"running", "done"})) &&
			(equal(hb, []string{"idle", "running", "done", "exited"}) || equal(hb, []string{"running", "done", "exited"})) &&
			turnsStarted(cx.bridge.Events(claudeSource, sa.ID)) == 1 && turnsStarted(cx.bridge.Events(codexSource, sb.ID)) == 1,
			"each its own turn: claude %v, codex %v", ha, hb)
	})
	resultsMu.Lock()
	res := results[row][claude.Label()]
	resultsMu.Unlock()
	record(codex.Label()+" (no-daemon)", row, res)
}
