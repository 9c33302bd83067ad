//go:build unix

package testenv

import (
	"os"
	"syscall"
	"testing"
)

// FIFO makes a FIFO at p for a test of hostile files; when the test ends
// it is released (see Release), so that a reader still blocked in an open
// of it lets the test end.
func FIFO(t testing.TB, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Release(p) })
}

// Release opens the FIFO at p for writing without blocking, ending a
// reader's wait in an open of it.
func Release(p string) {
	if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}
