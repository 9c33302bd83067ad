package gemini

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/agentbridge/agentbridge/proc"
)

// Agent says which processes are Gemini CLI's: a "gemini" executable (a
// standalone build), or Node running the gemini script
// (…/bin/gemini, …/@google/gemini-cli/bundle/gemini.js).
var Agent = proc.Agent{Names: []string{"gemini"}, Runtimes: []string{"node", "bun"}, Packages: []string{"gemini-cli"}}

// Gemini CLI opens its chat file for each record and closes it at once
// (appendFileSync), so no process is ever seen holding it: the writer is
// found otherwise. A chat's metadata names its project by projectHash, the
// SHA-256 of the working directory the CLI runs in; a Gemini CLI process
// whose working directory hashes to it, and that was running when the
// chat was last written, is a writer of that project's chats.

// writer is a Gemini CLI process that may write its project's chats.
type writer struct {
	pid     int
	started time.Time
}

// projectHash is how Gemini CLI names a project: the SHA-256, in hex, of
// its working directory.
func projectHash(cwd string) string {
	sum := sha256.Sum256([]byte(cwd))
	return hex.EncodeToString(sum[:])
}

// writers lists the Gemini CLI processes under root (normally proc.Root)
// by the project hash of their working directory (see relaunched).
func writers(root string, agent proc.Agent) map[string][]writer {
	out := map[string][]writer{}
	for _, w := range relaunched(proc.List(root, agent.Match)) {
		h := projectHash(w.Cwd)
		out[h] = append(out[h], writer{pid: w.PID, started: w.Started})
	}
	return out
}

// relaunched returns, of the Gemini CLI processes all, the one of each
// CLI that writes: Gemini CLI starts itself again as a child with more
// memory (unless GEMINI_CLI_NO_RELAUNCH is set) and waits for it, so of a
// topmost Gemini CLI process (no Gemini CLI parent) its first Gemini CLI
// child writes, or, with no child, the process itself. Deeper ones are
// the writer starting a command (git for the footer, a shell tool),
// caught between fork and exec with the writer's command line: taken for
// the writer, the session was bound to a process that was gone a moment
// later, and the resumed session never showed its process.
func relaunched(all []proc.Process) []proc.Process {
	gemini := make(map[int]bool, len(all))
	for _, p := range all {
		gemini[p.PID] = true
	}
	var out []proc.Process
	for _, top := range all {
		if gemini[top.PPID] {
			continue
		}
		w := top
		for _, c := range all {
			if c.PPID == top.PID && (w.PID == top.PID || c.Started.Before(w.Started)) {
				w = c
			}
		}
		out = append(out, w)
	}
	return out
}

// startSlack is how much later than a chat's last write a process may
// seem to have started and still count as its writer: start times are
// known to a clock tick, and the boot time they count from to a second.
const startSlack = time.Second

// pickWriter chooses the writer of a chat last written at mtime from the
// processes running in its project: one that was running then, and not
// bound to another live session (bound(pid) reports that) — or, when
// there is no such one, the only one that was running then (a process
// that started a new chat with /clear writes that one now). 0: none, or
// no telling which.
func pickWriter(cands []writer, mtime time.Time, bound func(pid int) bool) int {
	var running, free []int
	for _, w := range cands {
		if w.started.After(mtime.Add(startSlack)) {
			continue // started after the chat's last write: not its writer
		}
		running = append(running, w.pid)
		if !bound(w.pid) {
			free = append(free, w.pid)
		}
	}
	switch {
	case len(free) == 1:
		return free[0]
	case len(free) == 0 && len(running) == 1:
		return running[0]
	}
	return 0
}
