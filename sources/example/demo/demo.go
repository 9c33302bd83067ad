// Package demo bundles the Example Agent journals of testdata/journals/ into the
// binary: agentbridge demo replays them, and the golden tests of package
// example map them. See README.md for what each journal shows.
package demo

import (
	"embed"
	"io/fs"
)

//go:embed testdata/journals/*.jsonl
var embedded embed.FS

// Journals holds the bundled *.jsonl journals, one session per file named
// <session id>.jsonl, at the top of the file system.
var Journals fs.FS = mustSub(embedded, "testdata/journals")

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // unreachable: dir is a valid, embedded path
	}
	return sub
}
