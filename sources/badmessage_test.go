package sources

import "testing"

// TestBadMessageReadsAsEnglish: the skipped-line diagnostics agree in
// number for one line and for many.
func TestBadMessageReadsAsEnglish(t *testing.T) {
	tests := []struct {
		code string
		n    int
		why  map[string]bool
		want string
	}{
		{CodeInvalidJSON, 1, nil, "skipped 1 journal line that is not a JSON object"},
		{CodeInvalidJSON, 3, nil, "skipped 3 journal lines that are not JSON objects"},
		{CodeInvalidRecord, 1, nil, "skipped 1 journal line whose record has unusable fields"},
		{CodeInvalidRecord, 2, nil, "skipped 2 journal lines whose records have unusable fields"},
		{CodeInvalidEvent, 1, map[string]bool{"invalid_id": true}, "dropped 1 lifecycle event that broke the host's rules (invalid_id)"},
		{CodeInvalidEvent, 4, map[string]bool{"invalid_id": true, "duplicate": true}, "dropped 4 lifecycle events that broke the host's rules (duplicate, invalid_id)"},
		{CodePublishRefused, 1, nil, "the hub refused 1 session update"},
		{CodePublishRefused, 5, nil, "the hub refused 5 session updates"},
		{"other-code", 1, nil, "skipped 1 journal line (other-code)"},
	}
	for _, tt := range tests {
		if got := badMessage(tt.code, tt.n, tt.why); got != tt.want {
			t.Errorf("badMessage(%s, %d) = %q, want %q", tt.code, tt.n, got, tt.want)
		}
	}
}
