package fold

import (
	"slices"
	"testing"

	"github.com/agentbridge/agentbridge/validate"
	"github.com/agentbridge/agentbridge/validate/validatetest"
)

// TestEveryCodeIsTested checks that the tables of this package hold at
// least one case for every code Session.Apply can produce (the other
// entry points' are package validate's TestEveryCodeIsTested). Apply sees
// typed events of any harness: no invalid_type, no harness_not_enabled.
func TestEveryCodeIsTested(t *testing.T) {
	t.Parallel()
	seen := map[validate.Code]bool{}
	note := func(want []pc) {
		for _, w := range want {
			seen[w.Code] = true
		}
	}
	for _, c := range foldCases {
		for _, st := range c.steps {
			note(st.want)
		}
	}
	note(validatetest.Issues[validate.Code]("$.waitId", "invalid_array")) // TestFoldLimits
	for _, c := range validate.Codes {
		if !slices.Contains([]validate.Code{validate.InvalidType, validate.HarnessNotEnabled}, c) && !seen[c] {
			t.Errorf("no test case expects %s from %s", c, "Session.Apply")
		}
	}
}
