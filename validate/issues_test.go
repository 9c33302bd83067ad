package validate

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func manyIssues(n int) []Issue {
	is := make([]Issue, n)
	for i := range is {
		is[i] = Issue{Path: fmt.Sprintf("$[%d]", i), Code: InvalidType, Message: "must be an object"}
	}
	return is
}

func TestCap(t *testing.T) {
	t.Parallel()
	long := "$." + strings.Repeat("ключ", 200)
	for _, tc := range []struct {
		name          string
		in            []Issue
		max           int
		kept, omitted int
	}{
		{"none", nil, MaxIssues, 0, 0},
		{"under", manyIssues(3), MaxIssues, 3, 0},
		{"at", manyIssues(MaxIssues), MaxIssues, MaxIssues, 0},
		{"over", manyIssues(MaxIssues + 7), MaxIssues, MaxIssues, 7},
		{"a million", manyIssues(1_000_000), MaxIssues, MaxIssues, 1_000_000 - MaxIssues},
		{"no bound", manyIssues(150), -1, 150, 0},
		{"long path and message", []Issue{{Path: long, Code: UnknownField, Message: strings.Repeat("m", 2000)}}, MaxIssues, 1, 0},
	} {
		kept, omitted := Cap(tc.in, tc.max)
		if len(kept) != tc.kept || omitted != tc.omitted {
			t.Errorf("%s: Cap kept %d, omitted %d; want %d, %d", tc.name, len(kept), omitted, tc.kept, tc.omitted)
		}
		for _, x := range kept {
			if len(x.Path) > MaxIssuePath || len(x.Message) > MaxIssueMessage || !utf8.ValidString(x.Path) {
				t.Errorf("%s: issue not bounded: path %d bytes, message %d bytes", tc.name, len(x.Path), len(x.Message))
			}
		}
	}
	in := manyIssues(2)
	in[0].Path = long
	Cap(in, 1)
	if in[0].Path != long {
		t.Errorf("Cap changed its input")
	}
}

func TestCounter(t *testing.T) {
	t.Parallel()
	var c Counter
	c.Add(manyIssues(60)...)
	c.Add(manyIssues(60)...)
	c.Add()
	c.Add(manyIssues(5)...)
	if len(c.Issues) != MaxIssues || c.Omitted != 25 || c.Len() != 125 {
		t.Errorf("Counter holds %d, omitted %d, len %d; want %d, 25, 125", len(c.Issues), c.Omitted, c.Len(), MaxIssues)
	}
	if c.Issues[60].Path != "$[0]" {
		t.Errorf("issues kept out of order: %v", c.Issues[60])
	}
}

// TestDecodeResetHugeArray: a reset of half a million elements is one
// issue about its length plus the issues of the first MaxResetSessions,
// and decodes no more sessions than that.
func TestDecodeResetHugeArray(t *testing.T) {
	t.Parallel()
	raw := "[" + strings.TrimSuffix(strings.Repeat("1,", 500_000), ",") + "]"
	sessions, is := DecodeReset([]byte(raw), nil)
	if len(sessions) > MaxResetSessions || len(is) != MaxResetSessions+1 {
		t.Errorf("DecodeReset: %d sessions, %d issues; want at most %d and %d", len(sessions), len(is), MaxResetSessions, MaxResetSessions+1)
	}
	if is[0].Path != "$" || is[0].Code != InvalidArray {
		t.Errorf("first issue %v, want the array's length at $", is[0])
	}
}
