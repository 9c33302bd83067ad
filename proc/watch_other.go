//go:build !linux && !darwin

package proc

import (
	"context"
	"errors"
	"fmt"
)

// Watch would call onExit when the process pid ends; this platform has no
// way to watch a process the package knows, so it returns an error
// wrapping errors.ErrUnsupported.
func Watch(_ context.Context, pid int, _ uint64, _ func()) error {
	return fmt.Errorf("proc: watch %d: %w", pid, errors.ErrUnsupported)
}
