package qwen

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestLinesAfterTheExit: the bridge folds agent.exited when the agent's
// process ends, which may be seen before the chat's last lines are read;
// it closes the tools and waits. Those lines map to what the fold accepts
// (no wait.finished or tool.finished for what the exit closed), and the
// answer among them still ends the turn.
func TestLinesAfterTheExit(t *testing.T) {
	s := fold.NewSession("s1", Harness)
	var st State
	st.SetApprovalMode(ModeDefault)
	lines := []string{
		`{"uuid":"u1","sessionId":"s1","type":"user","message":{"parts":[{"text":"touch a file"}]}}`,
		`{"uuid":"a1","sessionId":"s1","type":"assistant","message":{"parts":[{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"touch x"}}}]}}`,
		sourcestest.Exit,
		`{"uuid":"r1","sessionId":"s1","type":"tool_result","toolCallResult":{"callId":"c1","status":"success"}}`,
		`{"uuid":"a2","sessionId":"s1","type":"assistant","message":{"parts":[{"text":"done"}]}}`,
	}
	sourcestest.FoldLines(t, s, lines, func(_ int, l []byte) []agentbridge.Event {
		evs, _ := Map("s1", s, l, &st)
		return evs
	})
	if snap := s.Snapshot(); snap.LastTurn != agentbridge.LastTurnCompleted || snap.Tool != "" {
		t.Errorf("last turn %q, tool %q; want completed, none", snap.LastTurn, snap.Tool)
	}
}

// TestResumedSessionLeavesTheDeadTurn: a session whose process ended in
// the middle of a turn and that a new process took up (qwen --resume; the
// bridge folds session.started with the new pid) is idle; a reply of the
// new process with no prompt before it does not go on with the dead
// process's turn (no tool shown running in it).
func TestResumedSessionLeavesTheDeadTurn(t *testing.T) {
	s := fold.NewSession("s1", Harness)
	var st State
	lines := []string{
		`{"uuid":"u1","sessionId":"s1","type":"user","message":{"parts":[{"text":"touch a file"}]}}`,
		`{"uuid":"a1","sessionId":"s1","type":"assistant","message":{"parts":[{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"touch x"}}}]}}`,
		sourcestest.Exit,
		sourcestest.Resume,
		`{"uuid":"a2","sessionId":"s1","type":"assistant","message":{"parts":[{"functionCall":{"id":"c2","name":"read_file","args":{}}}]}}`,
	}
	sourcestest.FoldLines(t, s, lines, func(_ int, l []byte) []agentbridge.Event {
		evs, _ := Map("s1", s, l, &st)
		return evs
	})
	if snap := s.Snapshot(); snap.Status != agentbridge.StatusIdle || snap.Tool != "" {
		t.Errorf("status %q, tool %q; want idle, none", snap.Status, snap.Tool)
	}
}

// TestHooksWhileTheChatIsRead: the agent's hooks arrive (Hub.Hook, on an
// HTTP handler's goroutine) while the source reads the session's chat and
// what the hub folded of it (its view per line, its cwd to find the
// process) on its own goroutine: every turn the chat tells is shown, with
// the session's cwd, and under -race no read of the source meets a write
// of a hook.
func TestHooksWhileTheChatIsRead(t *testing.T) {
	home := t.TempDir()
	const id = "5b1c2a4e-1b7d-4c55-9a8e-2d6f1e9b7c10"
	chat := filepath.Join(home, "projects", "-tmp-qwenhook-w", "chats", id+".jsonl")
	var clock sourcestest.Clock
	h := sourcestest.RunReal(t, New(sources.Options{Home: home}), &clock, hub.Options{Tested: map[string]agentbridge.VersionRange{}, QueueSize: 1 << 13}) // room for every hook's records
	t0 := time.Now().Add(-time.Hour).UnixMilli()
	line := func(uuid, typ string, at int64, part string) string {
		return `{"uuid":"` + uuid + `","sessionId":"` + id + `","timestamp":"` + time.UnixMilli(at).UTC().Format(time.RFC3339Nano) +
			`","type":"` + typ + `","cwd":"/tmp/qwenhook/w","version":"0.24.4","message":{"role":"` + typ + `","parts":[{"text":"` + part + `"}]}}` + "\n"
	}
	sourcestest.Append(t, chat, line("u0", "user", t0, "hi"))
	h.WaitFor(t, "the session", func(*hub.Hub) bool { _, ok := h.Entry(id); return ok })

	const turns, prompts = 20, 5 // prompts per turn
	read, done := make(chan struct{}), make(chan struct{})
	go func() { // the agent's hooks: prompts shown and answered while each turn is read
		defer close(done)
		at := time.Now().UnixMilli() // after every turn the chat dates
		for range read {
			for i := range prompts {
				key := "k" + strconv.Itoa(i)
				at += 2
				if err := h.Hook(ID, id, fold.Hook{Kind: fold.HookAsk, Key: key, Reason: "Approve run_shell_command", At: at}); err != nil {
					t.Error(err)
					return
				}
				if err := h.Hook(ID, id, fold.Hook{Kind: fold.HookAnswered, Key: key, At: at + 1}); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for i := 1; i <= turns; i++ {
		at := t0 + int64(i)*1000
		n := strconv.Itoa(i)
		sourcestest.Append(t, chat, line("u"+n, "user", at, "turn "+n)+line("a"+n, "assistant", at+500, "done "+n))
		read <- struct{}{}
		h.WaitFor(t, "turn "+n+" ended", func(*hub.Hub) bool {
			e, _ := h.Entry(id)
			return e.Snapshot.LastTurnEndedAt == at+500
		})
	}
	close(read)
	<-done
	if e, _ := h.Entry(id); e.Snapshot.Cwd != "/tmp/qwenhook/w" || e.Snapshot.LastTurn != agentbridge.LastTurnCompleted {
		t.Errorf("after the turns: cwd %q, last turn %q", e.Snapshot.Cwd, e.Snapshot.LastTurn)
	}
}
