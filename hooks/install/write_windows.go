package install

import (
	"os"

	"github.com/agentbridge/agentbridge/internal/atomicfile"
)

// writable is nil on Windows: the agents' settings are edited under WSL,
// where the bridge runs; a failed write is reported when it happens.
func writable(string) error { return nil }

// writeFile replaces path with b through a temporary file in the same
// directory renamed over it (renameio has no Windows support).
func writeFile(path string, b []byte, mode os.FileMode) error {
	return atomicfile.WriteFile(path, b, mode)
}
