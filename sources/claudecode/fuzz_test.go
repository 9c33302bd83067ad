package claudecode

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/validate"
)

// FuzzMapperLines feeds arbitrary transcripts (lines split on '\n') to a
// mapper, with a registry change in the middle and an exit at the end.
// Whatever the input, the mapper must not panic, must report bad lines
// only as ErrMalformed, and every event it emits must be valid and accepted
// by the fold in order: a transcript can never make the bridge publish
// something the contract rejects.
func FuzzMapperLines(f *testing.F) {
	f.Add([]byte(`{"type":"user","uuid":"u1","sessionId":"s","cwd":"/w","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"assistant","message":{"model":"m","content":[{"type":"tool_use","id":"t1","name":"AskUserQuestion","input":{}}],"stop_reason":"tool_use"}}` + "\n" +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}`))
	f.Add([]byte(`{"type":"assistant","message":{"model":"m","content":[{"type":"tool_use","id":"t2","name":"Agent","input":{"description":"d","subagent_type":"Explore"}}]}}` + "\n" +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"x"}]},"toolUseResult":{"status":"async_launched","agentId":"a1"}}` + "\n" +
		`{"type":"user","origin":{"kind":"task-notification"},"message":{"content":"<task-notification><tool-use-id>t2</tool-use-id><status>failed</status>"}}`))
	f.Add([]byte("[1,2]\n\"x\"\n{\"type\":\"system\",\"subtype\":\"turn_duration\"}\n{bad json\n{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"[Request interrupted by user] next\"}]}}"))
	f.Add([]byte(`{"type":"custom-title","customTitle":"a\u0000b /home/u/x/y"}` + "\n" + `{"type":"assistant","isApiErrorMessage":true,"error":"rate_limit","apiErrorStatus":429,"message":{"model":"<synthetic>"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := NewMapper("fuzz-session", MapperOptions{InferWaits: true})
		s := fold.NewSession(m.ID(), Harness)
		check := func(evs []agentbridge.Event) {
			for _, e := range evs {
				if is := validate.Event(e); len(is) > 0 {
					t.Fatalf("invalid %s: %+v", e.Kind, is)
				}
				if is := s.Apply(e); len(is) > 0 {
					t.Fatalf("fold rejects %s: %+v", e.Kind, is)
				}
				for _, txt := range []string{e.Title, e.PromptText, e.Reason, e.Summary} {
					if !utf8.ValidString(txt) || strings.ContainsAny(txt, "\x00\n") {
						t.Fatalf("text of %s not display text: %q", e.Kind, txt)
					}
				}
			}
		}
		lines := bytes.Split(data, []byte("\n"))
		for i, l := range lines {
			evs, err := m.Line(l)
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			check(evs)
			if i == len(lines)/2 {
				check(m.Registry(RegistryState{Status: RegistryWaiting, WaitingFor: string(l), WaitID: "wait-1-1"}, 0))
			}
		}
		check(m.Registry(RegistryState{Status: RegistryIdle}, 0))
		check(m.Exited(0, nil, ""))
		check(m.Start())
	})
}

// FuzzParseRegistry checks that no registry file content panics the
// parser, and that what it accepts is usable: a session id, a clean cwd.
func FuzzParseRegistry(f *testing.F) {
	f.Add([]byte(`{"pid":42,"sessionId":"abc","cwd":"/w","status":"waiting","waitingFor":"approve Bash","statusUpdatedAt":1}`))
	f.Add([]byte(`{"pid":42,"sessionId":"abc","sta`))
	f.Add([]byte(`{"pid":"42","sessionId":"abc","cwd":"C:\\x","startedAt":"1e3","procStart":12}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseRegistry(42, data)
		if err != nil {
			return
		}
		if e.SessionID == "" || e.PID != 42 {
			t.Fatalf("accepted entry without session id or with another pid: %+v", e)
		}
		if e.Cwd != "" && validate.CleanCwd(e.Cwd) != e.Cwd {
			t.Fatalf("unclean cwd %q", e.Cwd)
		}
	})
}
