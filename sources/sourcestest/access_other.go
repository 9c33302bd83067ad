//go:build !linux

package sourcestest

import (
	"errors"
	"fmt"
	"time"
)

// readWatch needs inotify (IN_CLOSE_NOWRITE), which this platform lacks:
// newReadWatch fails and a replay cannot run here. The replays run on
// Linux.
type readWatch struct{}

func newReadWatch() (*readWatch, error) {
	return nil, fmt.Errorf("read watch: %w", errors.ErrUnsupported)
}

func (*readWatch) reads(time.Duration) map[string]bool { return nil }

func (*readWatch) close() {}

func (*readWatch) waitRead(string, time.Duration) bool { return false }
func (*readWatch) add(string) error                    { return nil }
