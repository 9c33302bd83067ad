// Package example bundles the Example Agent journals of this directory into
// the binary, for agentbridge demo and the golden tests.
package example

import "embed"

// Journals holds the *.jsonl journals, at the top of the file system.
//
//go:embed *.jsonl
var Journals embed.FS
