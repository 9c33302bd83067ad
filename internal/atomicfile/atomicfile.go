// Package atomicfile replaces a file in one step: the new content is
// written to a temporary file in the same directory, synced, then renamed
// over the file, so that a reader (or a crash) sees the old file or the
// new one, never a part of either.
package atomicfile
