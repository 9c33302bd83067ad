//go:build unix

package atomicfile

import (
	"os"

	"github.com/google/renameio/v2"
)

// WriteFile replaces path with b atomically (renameio), with mode less
// the umask.
func WriteFile(path string, b []byte, mode os.FileMode) error {
	return renameio.WriteFile(path, b, mode)
}
