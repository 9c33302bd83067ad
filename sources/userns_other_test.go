//go:build !linux

package sources_test

import (
	"syscall"
	"testing"
)

// newUserNamespace skips the test: user namespaces are Linux's.
func newUserNamespace(t testing.TB) *syscall.SysProcAttr {
	t.Skip("user namespaces are Linux only")
	return nil
}
