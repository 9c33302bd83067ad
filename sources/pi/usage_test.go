package pi

import (
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestUsageMatchesJournals: the session's tokens are the sums of the
// journals' own assistant message.usage (input, output, cacheRead,
// cacheWrite), worked out from the files apart from the mapping.
func TestUsageMatchesJournals(t *testing.T) {
	sourcestest.CheckUsage(t, filepath.Join("testdata", "journals"), Harness, nil, mapper, map[string]*agentbridge.Usage{
		"bad-lines":         nil,
		"checkpoint-rewind": {InputTokens: 8104, OutputTokens: 99, CacheReadTokens: 14336},
		"model-context":     {InputTokens: 6457, OutputTokens: 36},
		"session-start":     {InputTokens: 15214, OutputTokens: 5},
		"tools-errors":      {InputTokens: 900, OutputTokens: 40},
		"two-sessions-1":    {InputTokens: 8138, OutputTokens: 114, CacheReadTokens: 14336},
		"two-sessions-2":    {InputTokens: 7796, OutputTokens: 50, CacheReadTokens: 7168},
	})
}
