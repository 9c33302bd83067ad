//go:build !windows

package service

import "github.com/google/renameio/v2"

// writeFile replaces path with content atomically (a synced temporary
// file in the same directory renamed over it), mode 0644 less the umask:
// a definition holds no secret.
func writeFile(path string, content []byte) error {
	return renameio.WriteFile(path, content, 0o644)
}
