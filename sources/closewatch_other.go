//go:build !linux

package sources

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentbridge/agentbridge/proc"
)

// CloseWatch tells when the last writer of a journal lets go of it. It
// needs inotify's IN_CLOSE_WRITE and /proc's open files, which this
// platform lacks (kqueue reports no close, and fsnotify exposes none
// portably): NewCloseWatch fails, and a source goes on without it.
type CloseWatch struct{}

// NewCloseWatch fails on this platform with an error wrapping
// errors.ErrUnsupported.
func NewCloseWatch(context.Context, proc.Agent, func(path string)) (*CloseWatch, error) {
	return nil, fmt.Errorf("close watch: %w", errors.ErrUnsupported)
}

// Add does nothing.
func (*CloseWatch) Add(string) error { return nil }

// Remove does nothing.
func (*CloseWatch) Remove(string) {}

// Close does nothing.
func (*CloseWatch) Close() {}
