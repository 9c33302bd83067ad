// Package testenv lets a test say that the machine lacks something it
// needs (a program, a kernel feature, a permission): on a developer's
// machine the test is skipped; in CI (CI=true, which .ci/run exports) it
// fails, so that a green CI run means every such test really ran.
package testenv

import (
	"os"
	"strconv"
	"testing"
)

// CI reports whether the tests run in CI: CI is set to a true value
// ("true", "1", …).
func CI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// Missing skips the test because the machine lacks what the message
// names, or fails it in CI.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("CI=true: this test must run here, but "+format, args...)
	}
	t.Skipf(format, args...)
}
