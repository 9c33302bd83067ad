package bridgetest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Binary builds ./cmd/agentbridge of the module at repoRoot into dir, once
// per test binary, and returns its path; later calls return the first
// build (their arguments are not looked at).
func Binary(t testing.TB, repoRoot, dir string) string {
	t.Helper()
	buildOnce.Do(func() {
		builtBin = filepath.Join(dir, "agentbridge")
		build := exec.Command("go", "build", "-o", builtBin, "./cmd/agentbridge")
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build agentbridge: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}
