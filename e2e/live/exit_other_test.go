//go:build !linux

package live

import (
	"testing"
	"time"
)

// The live suite runs on Linux (tmux, pidfd, inotify). Elsewhere it
// compiles, so that go vet checks it, and these helpers do not pretend.

// awaitExit cannot watch exits without pidfd: every pid is reported as
// still running.
func awaitExit(pids []int, _ time.Duration) []int { return pids }

// lastClose needs inotify's IN_CLOSE_WRITE: the test is skipped.
func lastClose(t *testing.T, _ string) func(time.Duration) time.Time {
	t.Skip("lastClose watches with inotify: Linux only")
	return nil
}
