package validate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// pc is an expected issue: path and code; messages are not compared.
type pc struct {
	Path string
	Code Code
}

func iss(pairs ...string) []pc {
	var out []pc
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, pc{pairs[i], Code(pairs[i+1])})
	}
	return out
}

// checkIssues compares issues by path and code, in any order, and checks
// that every issue has a message that does not repeat any of leak (values
// of 6 bytes or more, so that short ones cannot match by chance).
func checkIssues(tb testing.TB, call string, got []Issue, want []pc, leak ...string) {
	tb.Helper()
	var gotPC []pc
	for _, is := range got {
		gotPC = append(gotPC, pc{is.Path, is.Code})
		if is.Message == "" {
			tb.Errorf("%s: issue %s/%s has no message", call, is.Path, is.Code)
		}
		for _, l := range leak {
			if len(l) >= 6 && strings.Contains(is.Message, l) {
				tb.Errorf("%s: message %q repeats the value %q", call, is.Message, l)
			}
		}
	}
	less := func(a, b pc) bool { return a.Path+" "+string(a.Code) < b.Path+" "+string(b.Code) }
	if diff := cmp.Diff(want, gotPC, cmpopts.SortSlices(less), cmpopts.EquateEmpty()); diff != "" {
		tb.Errorf("%s issues mismatch (-want +got):\n%s", call, diff)
	}
}
