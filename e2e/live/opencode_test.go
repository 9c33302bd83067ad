package live

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// opencodeCLI is the pinned opencode. Its scenarios live beside its source
// (sources/opencode, TestRealCLI, which runs only with OPENCODE_BIN set):
// the live suite installs the CLI and runs them.
var opencodeCLI = agentCLI{Agent: "opencode", Pkg: "opencode-ai", Version: "1.18.33", Bin: "opencode"}

func TestOpencode(t *testing.T) {
	enabled(t)
	scenario(t, opencodeCLI.Label(), "prompt answered", func(t *testing.T) {
		bin := install(t, opencodeCLI)
		// The npm command is a Node wrapper; the tests want the native one.
		root := filepath.Dir(filepath.Dir(bin))
		if native, _ := filepath.Glob(filepath.Join(root, "opencode-linux-*", "bin", "opencode")); len(native) > 0 {
			bin = native[0]
		}
		cmd := exec.Command("go", "test", "-v", "-count=1", "-run", "TestRealCLI", "./sources/opencode/")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "OPENCODE_BIN="+bin)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sources/opencode TestRealCLI with %s: %v\n%s", opencodeCLI.Label(), err, out)
		}
		if strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("sources/opencode TestRealCLI did not run with %s:\n%s", bin, out)
		}
	})
}
