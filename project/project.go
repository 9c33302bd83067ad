// Package project decides whether a working directory belongs to a project:
// at or below its root, or inside a linked Git worktree of the same
// repository. It reads .git files and commondir itself; no git binary.
package project

// Contains reports whether cwd is root or below it, or inside a linked
// worktree of the repository whose main worktree (or any worktree) is root.
func Contains(root, cwd string) bool { panic("todo") }
