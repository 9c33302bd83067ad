package qwen

import (
	"bytes"
	"testing"

	"github.com/agentbridge/agentbridge/fold"
)

// FuzzMap feeds any bytes, line by line, to the chat mapper: it must not
// panic, and every event it reports must be one the fold takes.
func FuzzMap(f *testing.F) {
	f.Add([]byte(`{"uuid":"u1","sessionId":"s1","type":"user","message":{"parts":[{"text":"hi"}]}}` + "\n" +
		`{"uuid":"a1","sessionId":"s1","type":"assistant","message":{"parts":[{"functionCall":{"id":"c1","name":"x"}}]}}` + "\n" +
		`{"uuid":"r1","sessionId":"s1","type":"tool_result","toolCallResult":{"callId":"c1","status":"cancelled"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var st State
		st.SetApprovalMode(ModeDefault) // approvals mapped too
		s := fold.NewSession("s1", Harness)
		for _, line := range bytes.Split(data, []byte("\n")) {
			events, _ := Map("s1", s, line, &st)
			for _, e := range events {
				if issues := s.Apply(e); len(issues) > 0 {
					t.Fatalf("fold rejected %+v: %+v", e, issues)
				}
			}
		}
	})
}
