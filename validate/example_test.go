package validate_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

func ExampleBound() {
	prompt := "Please fix the failing test\n\nin the parser package, then run it again"
	fmt.Println(validate.Bound(prompt, 40))
	// Output: Please fix the failing test in the pars…
}

func ExampleRedact() {
	fmt.Println(validate.Redact("retry with ANTHROPIC_API_KEY=sk-ant-api03-AbCdEf0123456789AbCdEf0123456789"))
	fmt.Println(validate.Redact(`curl -H "Authorization: Bearer abcdef0123456789"`))
	// Output:
	// retry with ANTHROPIC_API_KEY=[redacted]
	// curl -H "Authorization: [redacted]"
}

func ExampleDecodeSnapshot() {
	raw := json.RawMessage(`{"id":"sess 1","harness":"codex","status":"paused","cwd":"","extra":true,
		"subagents":[{"id":"a","status":"running"},{"id":"a","status":"done"}]}`)
	_, issues := validate.DecodeSnapshot(raw, validate.Harnesses{"example-agent": true})
	for _, is := range issues {
		fmt.Println(is.Path, is.Code)
	}
	// Output:
	// $.extra unknown_field
	// $.id invalid_id
	// $.harness harness_not_enabled
	// $.cwd invalid_string
	// $.status invalid_enum
	// $.subagents[0].type invalid_string
	// $.subagents[1].type invalid_string
	// $.subagents[1].status invalid_enum
	// $.subagents[1] duplicate
}

func ExampleSession() {
	s := validate.NewSession("sess-1", "example-agent")
	for _, e := range []agentbridge.Event{
		{Kind: agentbridge.KindTurnStarted, TurnID: "t1", PromptText: "Fix tests"},
		{Kind: agentbridge.KindWaitStarted, WaitID: "w1", State: agentbridge.StatusWaiting, Reason: "Approve shell command"},
		{Kind: agentbridge.KindWaitFinished, WaitID: "w2"},
	} {
		if issues := s.Apply(e); issues != nil {
			fmt.Println("rejected:", issues[0].Path, issues[0].Code)
		}
	}
	snap := s.Snapshot()
	fmt.Println(snap.Title, "|", snap.Status, "|", snap.WaitingFor)
	// Output:
	// rejected: $.waitId invalid_id
	// Fix tests | waiting | Approve shell command
}
