package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMissing: without CI a missing prerequisite skips the test; with
// CI=true it fails it (checked in a child test process).
func TestMissing(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Missing(t, "no %s here", "frobnicator")
		return
	}
	for _, tc := range []struct {
		ci   string
		want string
	}{
		{"", "--- SKIP: TestMissing"},
		{"false", "--- SKIP: TestMissing"},
		{"true", "--- FAIL: TestMissing"},
		{"1", "--- FAIL: TestMissing"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissing$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "CI="+tc.ci)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "no frobnicator here") {
			t.Errorf("CI=%q: want %q with the reason; got:\n%s", tc.ci, tc.want, out)
		}
	}
}
