package claudecode

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

// FuzzWholeFiles feeds arbitrary content as a subagent sidecar and as a
// registry file (of a pid that names no process) to the handler, around a
// subagent transcript line and a scan's end: whatever the bytes, nothing
// panics, every event the hub gets is one it accepts, and a sidecar's
// text never reaches a session unbounded.
func FuzzWholeFiles(f *testing.F) {
	f.Add([]byte(`{"agentType":"Explore","description":"look around","toolUseId":"toolu_1"}`), []byte(`{"pid":4194000,"sessionId":"s-1","status":"waiting","waitingFor":"approve Bash"}`))
	f.Add([]byte(`{"agentType":1,"description":null}`), []byte(`{"pid":"x"`))
	f.Add([]byte("\x00\xff"), []byte(""))
	f.Fuzz(func(t *testing.T, meta, reg []byte) {
		dir := t.TempDir()
		o := Options{Home: dir, Logger: slog.New(slog.DiscardHandler)} // as New makes it
		pub := sourcestest.New()
		ss := sources.NewSessions(context.Background(), pub, []string{Harness}, 0, func(fn func()) { fn() }, nil)
		h := newHandler(o, ss)
		const sid = "7d7d7d7d-0000-4000-8000-000000000001"
		tr := filepath.Join(dir, "projects", "-p", sid, "subagents", "agent-a1.jsonl")
		if !h.MatchWhole(filepath.Join(dir, "projects", "-p", sid, "subagents", "agent-a1"+metaSuffix)) || !h.MatchWhole(filepath.Join(dir, "sessions", "4194000.json")) {
			t.Fatal("MatchWhole misses the sidecar or the registry file")
		}
		h.Rescan()
		h.WholeFile(filepath.Join(dir, "sessions", "4194000.json"), reg)
		h.Line(filepath.Join(dir, "projects", "-p", sid+".jsonl"), []byte(prompt(sid, 1, "p", "hello")))
		h.Line(tr, []byte(rec(sid, 2, "user", `"isSidechain":true,"agentId":"a1","message":{"role":"user","content":"sub"}`)))
		h.WholeFile(filepath.Join(dir, "projects", "-p", sid, "subagents", "agent-a1"+metaSuffix), meta)
		h.ScanDone()
		h.Idle()
		if pub.Refused() > 0 {
			t.Fatalf("the hub refused %d calls", pub.Refused())
		}
		for _, s := range pub.Snapshots() {
			for _, sa := range s.Subagents {
				if utf8.RuneCountInString(sa.Title) > validate.MaxTitle || utf8.RuneCountInString(sa.Type) > validate.MaxText {
					t.Fatalf("subagent text unbounded: %q / %q", sa.Title, sa.Type)
				}
			}
		}
	})
}
