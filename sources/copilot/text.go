package copilot

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"

	"github.com/agentbridge/agentbridge/sources"
)

// safeID returns s when it is an identity value, else a stable id derived
// from it ("x-" and 24 hex digits of its SHA-256), so that a journal read
// again maps to the same ids. Empty s gives "".
func safeID(s string) string {
	if s == "" || sources.ValidID(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "x-" + hex.EncodeToString(sum[:12])
}

// host returns the host of a URL (never its path or query, which may carry
// tokens), or "" when raw is not one.
func host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
