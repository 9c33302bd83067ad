package gemini

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
)

// TestUsageMatchesRecordings replays the recorded Gemini CLI chats and
// compares the token usage, summed over a recording's sessions, with the
// sums of the files' own "tokens" (each reply once, however often it is
// re-appended; input less cached plus tool-use prompt, output plus
// thoughts, cached), worked out from the files independently of the
// mapper. A rewind drops the rewound replies with the rest of what it
// rewinds: the usage is that of the conversation as it stands.
func TestUsageMatchesRecordings(t *testing.T) {
	want := map[string]agentbridge.Usage{
		"chats__v0.40-agent-sessions-fixture":            {InputTokens: 12422, OutputTokens: 228, CacheReadTokens: 11502},
		"gemini-cli__1-1_session-start":                  {InputTokens: 11476, OutputTokens: 288},
		"gemini-cli__1-2_session-end":                    {InputTokens: 22962, OutputTokens: 297},
		"gemini-cli__1-3_long-idle-live-session":         {InputTokens: 22982, OutputTokens: 467},
		"gemini-cli__1-4_session-resume":                 {InputTokens: 22974, OutputTokens: 199},
		"gemini-cli__1-5_session-reset":                  {InputTokens: 22956, OutputTokens: 805},
		"gemini-cli__1-6_checkpoint-rewind":              {InputTokens: 73882, OutputTokens: 2206}, // 85372 / 2341 before the rewind
		"gemini-cli__1-8_model-context-display":          {InputTokens: 11480, OutputTokens: 154},
		"gemini-cli__3-3_background-process":             {InputTokens: 23742, OutputTokens: 635},
		"gemini-cli__3-4_subagent-orphan-cleanup":        {InputTokens: 11559, OutputTokens: 884},
		"gemini-cli__4-1_multiple-sessions-same-cwd":     {InputTokens: 34469, OutputTokens: 791},
		"gemini-cli__4-2_multiple-agents-same-workspace": {InputTokens: 11484, OutputTokens: 257},
	}
	got := map[string]agentbridge.Usage{}
	for name, c := range goldenCases(t) {
		if c.harness != HarnessGemini {
			continue
		}
		g := replayFile(t, c.harness, "sess-1", c.lines)
		if g.Activity == nil || g.Activity.Usage == nil {
			continue
		}
		rec, _, _ := strings.Cut(name, "__s")
		got[rec] = got[rec].Add(*g.Activity.Usage)
	}
	for rec, w := range want {
		if got[rec] != w {
			t.Errorf("%s: usage = %+v, want the recording's own %+v", rec, got[rec], w)
		}
	}
}
