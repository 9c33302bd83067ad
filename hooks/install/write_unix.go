//go:build !windows

package install

import (
	"os"

	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"
)

// writable says why path cannot be written by this user (nil when it
// can), without writing it.
func writable(path string) error { return unix.Access(path, unix.W_OK) }

// writeFile replaces path with b atomically (a temporary file in the same
// directory, synced, renamed over it), keeping the mode of the file it
// replaces, else giving it mode.
func writeFile(path string, b []byte, mode os.FileMode) error {
	return renameio.WriteFile(path, b, mode)
}
