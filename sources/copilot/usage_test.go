package copilot

import (
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
)

// TestUsageMatchesJournals: the session's tokens are the sums of the
// journals' own assistant.message outputTokens (Copilot CLI records no
// input counts), subagents' included, worked out from the files apart
// from the mapping.
func TestUsageMatchesJournals(t *testing.T) {
	kittest.CheckUsage(t, filepath.Join("testdata", "journals"), Harness, nil,
		func(id string) kittest.Mapper { return kittest.Mapper{Line: (&mapper{session: id}).Map} },
		map[string]*agentbridge.Usage{
			"background-subagent":     {OutputTokens: 36},
			"compaction-escape-error": nil,
			"hostile":                 {OutputTokens: 12},
			"permission-approved":     {OutputTokens: 24},
			"permission-denied-abort": {OutputTokens: 36},
			"permission-kinds":        {OutputTokens: 24},
			"questions-and-plan":      {OutputTokens: 36},
			"resume":                  {OutputTokens: 24},
			"steering-and-open-tool":  nil,
		})
}
