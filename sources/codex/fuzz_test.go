package codex

import (
	"bytes"
	"testing"
)

// FuzzRollout feeds arbitrary rollout text (split into lines, shared
// between a parent-like and a child-like rollout) through the engine: it
// must never panic, and every event it publishes must be valid, accepted
// by the fold, and free of paths in display text.
func FuzzRollout(f *testing.F) {
	f.Add([]byte(metaLine + "\n" + startLine + "\n" + ctxLine + "\n" + userLine + "\n" + callLine + "\n" + outOKLine + "\n" + doneLine + "\n"))
	f.Add([]byte(`{"id":"031d3ab5-1e7f-4e55-8e54-10ebd73d1a8d","timestamp":"2026-04-06T18:46:22.298Z"}` + "\n" +
		`{"record_type":"state"}` + "\n" +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/a/b</cwd>\n</environment_context>"}]}` + "\n" +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]}` + "\n" +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}` + "\n"))
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"p","source":"cli"}}` + "\n" +
		`{"type":"session_meta","payload":{"id":"c","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}}}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"collab_agent_spawn_end","sender_thread_id":"p","new_thread_id":"c"}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"collab_close_end","receiver_thread_id":"c","status":{"completed":"x"}}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e := NewEngine()
		var pubs []Pub
		keys := []string{"a", "b"}
		for i, line := range bytes.Split(data, []byte("\n")) {
			pubs = append(pubs, e.Line(keys[i%2], line)...)
		}
		pubs = append(pubs, e.Flush("a")...)
		pubs = append(pubs, e.Flush("b")...)
		pubs = append(pubs, e.SetName("p", "name /x/y/z")...)
		pubs = append(pubs, e.Close("a")...)
		checkPublishable(t, pubs)
		foldAll(t, pubs)
	})
}
