package kit

import (
	"maps"
	"slices"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
)

// Publish folds a session's events through ss and queues the session for
// a process lookup (the journal at path is the writer's evidence, see
// Procs.Flush) when a session.started names its cwd, and when a turn
// starts in a session with no process: one whose process ended (a resumed
// session is written by a new process) or was never found.
func Publish(ss *sources.Sessions, procs *Procs, id, harness, path string, evs []agentbridge.Event) {
	for _, e := range evs {
		orphan := e.Kind == agentbridge.KindTurnStarted && ss.Exited(id)
		if !ss.Event(id, harness, e) {
			continue
		}
		switch {
		case e.Kind == agentbridge.KindSessionStarted && e.Cwd != "":
			procs.Want(id, e.Cwd, path)
		case e.Kind == agentbridge.KindTurnStarted:
			if snap := ss.Get(id).Snapshot(); orphan || snap.PID == 0 {
				procs.Want(id, snap.Cwd, path)
			}
		}
	}
}

// SideFiles remembers which sessions' side files (sidecars an agent
// rewrites whole) changed, so that each is read once, whole, at the
// tailer's next idle moment however many lines announced it.
type SideFiles struct{ paths map[string]string } // session id → side file

// Mark says session id's side file at path may have changed.
func (s *SideFiles) Mark(id, path string) {
	if s.paths == nil {
		s.paths = map[string]string{}
	}
	s.paths[id] = path
}

// Forget drops what was marked for id (its session is gone).
func (s *SideFiles) Forget(id string) { delete(s.paths, id) }

// Reset drops every mark.
func (s *SideFiles) Reset() { clear(s.paths) }

// Read reads each marked side file with sources.ReadSmall (regular files
// of at most limit bytes), in session id order, hands the bytes to f, and
// drops the marks. A side file that is missing or not a small regular
// file is skipped until its next change.
func (s *SideFiles) Read(limit int64, f func(id string, data []byte)) {
	for _, id := range slices.Sorted(maps.Keys(s.paths)) {
		if data, err := sources.ReadSmall(s.paths[id], limit); err == nil {
			f(id, data)
		}
	}
	clear(s.paths)
}
