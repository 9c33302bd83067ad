package sources

import (
	"testing"

	"github.com/agentbridge/agentbridge"
)

// Where the platform cannot tell a journal's holder (macOS), a source that
// needs it says "exited" is unavailable instead of claiming to observe it.
func TestExitedByHolder(t *testing.T) {
	if o := exitedByHolder(true); o.How != agentbridge.Observed || o.From != "process" {
		t.Errorf("with holders known: %+v", o)
	}
	if o := exitedByHolder(false); o.How != agentbridge.Unavailable {
		t.Errorf("without holders: %+v, want unavailable", o)
	}
}
