package copilot

import (
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestUsageMatchesJournals: the session's tokens are the sums of the
// journals' own counts, subagents' included, worked out from the files
// apart from the mapping: assistant.message outputTokens (up to 1.0.7x,
// no input counts), or session.usage_record (1.0.102: input, output and
// cache counts per model call; its assistant.message carries none).
func TestUsageMatchesJournals(t *testing.T) {
	sourcestest.CheckUsage(t, filepath.Join("testdata", "journals"), Harness, nil,
		func(id string) sourcestest.Mapper { return sourcestest.Mapper{Viewed: (&mapper{session: id}).Map} },
		map[string]*agentbridge.Usage{
			"background-subagent":             {OutputTokens: 36},
			"compaction-escape-error":         nil,
			"hostile":                         {OutputTokens: 12},
			"permission-approved":             {OutputTokens: 24},
			"permission-denied-abort":         {OutputTokens: 36},
			"permission-kinds":                {OutputTokens: 24},
			"questions-and-plan":              {OutputTokens: 36},
			"resume":                          {OutputTokens: 24},
			"steering-and-open-tool":          nil,
			"live-1.0.102-permission-approve": {InputTokens: 20, OutputTokens: 10},
			"live-1.0.102-permission-deny":    {InputTokens: 20, OutputTokens: 10},
			"live-1.0.102-withdrawn-prompt":   nil,
		})
}
