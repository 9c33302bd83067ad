//go:build unix

package proc

import (
	"io/fs"
	"syscall"
)

// KeyOf returns the key of a file from its FileInfo (from os.Stat, Lstat or
// a DirEntry's Info); false when the info carries no inode.
func KeyOf(info fs.FileInfo) (FileKey, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st == nil {
		return FileKey{}, false
	}
	return FileKey{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, true
}
