package validate_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentbridge/agentbridge/validate"
)

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
