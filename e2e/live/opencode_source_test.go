package live

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestOpencodeSourceRealCLI runs the opencode source's own real-CLI tests
// (sources/opencode, TestRealCLI*) against the pinned opencode the rig
// installs: they skip without OPENCODE_BIN, and here they must run and
// pass, every one of them, never skip.
func TestOpencodeSourceRealCLI(t *testing.T) {
	enabled(t)
	bin := install(t, opencodeCLI)
	cmd := exec.Command("go", "test", "-race", "-count=1", "-v", "-run", "^TestRealCLI", "./sources/opencode")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "OPENCODE_BIN="+bin)
	out, err := tracked(t, cmd).CombinedOutput()
	if err != nil {
		t.Fatalf("go test ./sources/opencode with OPENCODE_BIN=%s: %v\n%s", bin, err, out)
	}
	passed := regexp.MustCompile(`(?m)^--- PASS: (TestRealCLI\w*)`).FindAllStringSubmatch(string(out), -1)
	if strings.Contains(string(out), "--- SKIP") || len(passed) < 2 {
		t.Fatalf("want TestRealCLI and TestRealCLIRejected to run and pass, none skipped; got:\n%s", out)
	}
	for _, p := range passed {
		t.Logf("%s passed with %s", p[1], opencodeCLI.Label())
	}
}
