package claudecode

import (
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
)

// TestUsageMatchesJournals replays recorded transcripts and compares the
// session's token usage with the sums of the journals' own message.usage
// (each message once, however many content-block records repeat it;
// synthetic and API-error records left out), worked out from the files
// independently of the mapper.
func TestUsageMatchesJournals(t *testing.T) {
	for _, tt := range []struct {
		journal string
		want    *agentbridge.Usage // nil: the journal records no usage
	}{
		{"v1.0-edge-cases-malformed-lines", &agentbridge.Usage{InputTokens: 488, OutputTokens: 435}},
		{"v1.0-summary-tooluseresult", &agentbridge.Usage{InputTokens: 218, OutputTokens: 445}},
		{"v1.0-synthetic-inline-sidechain", &agentbridge.Usage{InputTokens: 4, OutputTokens: 4}},
		{"v2.0-synthetic-task-denial-api-error", &agentbridge.Usage{InputTokens: 50, OutputTokens: 25}},
		{"v2.1-irrlicht-05-bug-c-orphan-toolresult", &agentbridge.Usage{InputTokens: 51, OutputTokens: 5669, CacheReadTokens: 3695337, CacheWriteTokens: 14438}},
		{"v2.1-irrlicht-07-tool-denial-and-esc-db57d2ab", &agentbridge.Usage{InputTokens: 19, OutputTokens: 310, CacheReadTokens: 108816, CacheWriteTokens: 15274}},
		{"v2.1-irrlicht-10-full-lifecycle-839f0678", &agentbridge.Usage{InputTokens: 26, OutputTokens: 570, CacheReadTokens: 165867, CacheWriteTokens: 32414}},
		{"v2.1-irrlicht-13-full-lifecycle-continue-8a525d27", &agentbridge.Usage{InputTokens: 60, OutputTokens: 2123, CacheReadTokens: 418421, CacheWriteTokens: 26033}},
		{"v2.1-irrlicht-14-user-esc-interrupt-06f604ec", &agentbridge.Usage{InputTokens: 6, CacheReadTokens: 16902, CacheWriteTokens: 11497}},
		{"v2.1-irrlicht-15-permission-hooks-a845d6c4", &agentbridge.Usage{InputTokens: 23, OutputTokens: 497, CacheReadTokens: 196147, CacheWriteTokens: 14119}},
		{"v2.1-irrlicht-16-ask-user-question-issue-150", &agentbridge.Usage{InputTokens: 146, OutputTokens: 2359, CacheReadTokens: 1572307, CacheWriteTokens: 46447}},
		{"v2.1-irrlicht-17-issue-329-away-summary", &agentbridge.Usage{InputTokens: 4, OutputTokens: 2}},
		{"v2.1-irrlicht-agent-question-pending", &agentbridge.Usage{InputTokens: 6, OutputTokens: 13, CacheReadTokens: 16742, CacheWriteTokens: 12704}},
		{"v2.1-irrlicht-full-lifecycle-toolcall", &agentbridge.Usage{InputTokens: 7, OutputTokens: 95, CacheReadTokens: 46282, CacheWriteTokens: 12908}},
		{"v2.1-irrlicht-interrupted-turn", &agentbridge.Usage{InputTokens: 6, OutputTokens: 6, CacheReadTokens: 28589, CacheWriteTokens: 121}},
		{"v2.1-irrlicht-multi-turn-conversation", &agentbridge.Usage{InputTokens: 18, OutputTokens: 24, CacheReadTokens: 72532, CacheWriteTokens: 13271}},
		{"v2.1-irrlicht-permission-hook-denial", &agentbridge.Usage{InputTokens: 7, OutputTokens: 163, CacheReadTokens: 46303, CacheWriteTokens: 12999}},
		{"v2.1-irrlicht-subagent-spawn", &agentbridge.Usage{InputTokens: 1184, OutputTokens: 526, CacheReadTokens: 29514, CacheWriteTokens: 30156}},
		{"v2.1-record-type-catalog", &agentbridge.Usage{InputTokens: 10, OutputTokens: 5}},
		{"v2.1-schema-drift", nil},
	} {
		t.Run(tt.journal, func(t *testing.T) {
			_, fold := replay(t, filepath.Join("testdata", "journals", tt.journal+".jsonl"), MapperOptions{InferWaits: true})
			var got *agentbridge.Usage
			if a := fold.Activity(); a != nil {
				got = a.Usage
			}
			switch {
			case (got == nil) != (tt.want == nil):
				t.Fatalf("usage = %+v, want %+v", got, tt.want)
			case got != nil && *got != *tt.want:
				t.Errorf("usage = %+v, want the journal's own %+v", *got, *tt.want)
			}
		})
	}
}
