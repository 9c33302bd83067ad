package validate

import (
	"testing"

	"github.com/agentbridge/agentbridge"

	"github.com/agentbridge/agentbridge/validate/validatetest"
)

type E = agentbridge.Event

// pc is an expected issue: path and code; messages are not compared.
type pc = validatetest.Want[Code]

func iss(pairs ...string) []pc { return validatetest.Issues[Code](pairs...) }

// checkIssues compares issues by path and code, in any order, and checks
// that every issue has a message that does not repeat any of leak (values
// of 6 bytes or more, so that short ones cannot match by chance).
func checkIssues(tb testing.TB, call string, got []Issue, want []pc, leak ...string) {
	tb.Helper()
	validatetest.Check(tb, call, got, want, leak...)
}

// checkWellFormed asserts the form of every issue: a path from "$", a code
// of the contract and a message.
func checkWellFormed(tb testing.TB, call string, is []Issue) {
	tb.Helper()
	validatetest.WellFormed(tb, call, is, Codes)
}
