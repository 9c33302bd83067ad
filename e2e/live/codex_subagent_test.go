package live

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Codex's multi-agent tools (feature multi_agent, on by default in both
// pinned versions) are offered to the model in the Responses API tool
// namespace "multi_agent_v1": spawn_agent {message, agent_type}, wait_agent
// {targets, timeout_ms}, send_input, close_agent, resume_agent. A call must
// name the namespace, or Codex answers "unsupported call". spawn_agent
// returns {"agent_id": <the child's thread id>, "nickname": …}; the child is
// a thread of its own, with its own rollout (session_meta source
// {"subagent":{"thread_spawn":{parent_thread_id, agent_nickname,
// agent_role}}}) and its own requests to the model, whose last message is
// the spawn message. When it ends, its parent gets a <subagent_notification>
// user message and wait_agent returns {"status":{<id>:{"completed":<its
// last message>}}}.
const codexMultiAgent = "multi_agent_v1"

// addAgentRole writes a custom agent role ($CODEX_HOME/agents/<name>.toml)
// whose only nickname is nickname, so that a spawned subagent's title and
// type are known in advance (without it Codex picks a philosopher's name
// at random, and the role is empty).
func (r *codexRig) addAgentRole(name, nickname string) {
	r.t.Helper()
	dir := filepath.Join(r.codex, "agents")
	role := "name = " + tomlString(name) + "\n" +
		"description = \"Checks one thing and reports back.\"\n" +
		"developer_instructions = \"Check what you are given and report.\"\n" +
		"nickname_candidates = [" + tomlString(nickname) + "]\n"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".toml"), []byte(role), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func tomlString(s string) string {
	b, _ := json.Marshal(s) // a JSON string is a TOML basic string for these
	return string(b)
}

// spawnedAgent returns the agent id in the output of a spawn_agent call
// (the last message of the parent's request after it), "" if none.
func spawnedAgent(last string) string {
	var item struct {
		Type   string `json:"type"`
		Output string `json:"output"`
	}
	if json.Unmarshal([]byte(last), &item) != nil || item.Type != "function_call_output" {
		return ""
	}
	var out struct {
		AgentID string `json:"agent_id"`
	}
	_ = json.Unmarshal([]byte(item.Output), &out)
	return out.AgentID
}

// Two parent turns, one subagent each, in one TUI. The first spawns a
// "checker" (role checker, nickname Ada) and waits for it; the second
// spawns a helper with the parent's history forked into it (fork_context;
// a forked agent inherits the parent's type, and its nickname is Codex's
// pick) and waits for it. The bridge lists each under the parent, running
// while its model reply is held, then completed, before the parent's turn
// ends; the first turn, replayed into the helper's rollout, does not end
// the helper. No child thread is ever a session of its own.
func codexSubagent(t *testing.T, c agentCLI, daemon bool) {
	r := newCodexRig(t, c, daemon)
	r.addAgentRole("checker", "Ada")
	checker, helper := make(chan struct{}), make(chan struct{})
	open := map[chan struct{}]bool{checker: true, helper: true}
	release := func(ch chan struct{}) {
		if open[ch] {
			close(ch)
			open[ch] = false
		}
	}
	defer release(checker)
	defer release(helper)
	wait := &ToolCall{Namespace: codexMultiAgent, Name: "wait_agent", InputFrom: func(last string) map[string]any {
		return map[string]any{"targets": []string{spawnedAgent(last)}, "timeout_ms": 300000}
	}}
	r.model.Script(
		Step{When: "delegate the check", Tool: &ToolCall{Namespace: codexMultiAgent, Name: "spawn_agent",
			Input: map[string]any{"agent_type": "checker", "message": "SUBTASK: check the widget"}}},
		Step{When: "SUBTASK: check the widget", Gate: checker, Text: "Widget checked."},
		Step{When: "agent_id", Tool: wait},
		Step{When: "Widget checked.", Text: "The checker reported back."},
		Step{When: "fork a helper", Tool: &ToolCall{Namespace: codexMultiAgent, Name: "spawn_agent",
			Input: map[string]any{"message": "SUBTASK: help with the fork", "fork_context": true}}},
		Step{When: "SUBTASK: help with the fork", Gate: helper, Text: "Helped."},
		Step{When: "agent_id", Tool: wait},
		Step{When: "Helped.", Text: "The helper is done."},
	)
	term := r.tui()
	var s snapshot
	// running: the parent runs, and its subagent n (0-based) too.
	running := func(n int) func() bool {
		return func() bool {
			all := r.bridge.Sessions(codexSource)
			if len(all) != 1 {
				return false
			}
			s = all[0]
			return s.Status == "running" && len(s.Subagents) == n+1 && s.Subagents[n].Status == "running"
		}
	}
	// finished: the parent is done, its n+1 subagents completed.
	finished := func(n int) func() bool {
		return func() bool {
			s, _ = r.bridge.Session(codexSource, s.ID)
			if s.Status != "done" || s.LastTurn != "completed" || len(s.Subagents) != n+1 {
				return false
			}
			for _, sa := range s.Subagents {
				if sa.Status != "completed" {
					return false
				}
			}
			return true
		}
	}

	prompt(term, "delegate the check")
	r.bridge.Await("the checker running under a running parent", 90*time.Second, running(0))
	ada := s.Subagents[0]
	r.checkf(ada.Title == "Ada" && ada.Type == "checker" && ada.ID != s.ID, "checker: %s", s)
	release(checker)
	term.AwaitScreen(90*time.Second, "The checker reported back.")
	r.bridge.Await("the checker completed and the parent done", 30*time.Second, finished(0))

	prompt(term, "fork a helper")
	r.bridge.Await("the forked helper running under a running parent", 90*time.Second, running(1))
	fork := s.Subagents[1]
	r.checkf(fork.Title != "" && fork.Title != "Ada" && fork.ID != ada.ID && s.Subagents[0].Status == "completed", "helper: %s", s)
	release(helper)
	term.AwaitScreen(90*time.Second, "The helper is done.")
	r.bridge.Await("the helper completed and the parent done", 30*time.Second, finished(1))
	r.checkf(r.model.Left() == 0, "scripted steps left: %d", r.model.Left())

	evs := r.bridge.Events(codexSource, s.ID)
	r.checkf(turnsStarted(evs) == 2, "two parent turns: %v", evs)
	var order []string
	for _, e := range evs {
		switch {
		case e.Kind == "subagent.started" || e.Kind == "subagent.done":
			order = append(order, e.Kind+" "+map[string]string{ada.ID: "checker", fork.ID: "helper"}[e.SubagentID])
		case e.Kind == "agent.done":
			order = append(order, e.Kind)
		}
	}
	want := []string{"subagent.started checker", "subagent.done checker", "agent.done",
		"subagent.started helper", "subagent.done helper", "agent.done"}
	r.checkf(equal(order, want), "order %v", order)
	for _, x := range r.bridge.Sessions(codexSource) {
		r.checkf(x.ID == s.ID, "a subagent is never a session of its own: %s", x)
	}
	r.checkf(len(r.bridge.Events(codexSource, ada.ID)) == 0 && len(r.bridge.Events(codexSource, fork.ID)) == 0 && len(r.rollouts()) == 3,
		"the children's rollouts are no sessions: %s", r.bridge.dump())
}
