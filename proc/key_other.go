//go:build !unix

package proc

import "io/fs"

// KeyOf returns the key of a file from its FileInfo; false on this
// platform, whose FileInfo carries no inode.
func KeyOf(fs.FileInfo) (FileKey, bool) { return FileKey{}, false }
