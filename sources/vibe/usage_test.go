package vibe

import (
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestUsageMatchesMeta: the session's tokens are meta.json's own totals
// (stats.session_prompt_tokens and session_completion_tokens; Vibe records
// no cache split); a session without stats shows none.
func TestUsageMatchesMeta(t *testing.T) {
	sourcestest.CheckUsage(t, filepath.Join("testdata", "sessions"), Harness, metaOf, mapper, map[string]*agentbridge.Usage{
		"tools-errors":  {InputTokens: 9000, OutputTokens: 300},
		"session-start": nil,
	})
}
