package sources

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
)

// BindPID binds the session to process pid and reports agent.exited when
// it ends (observed with a pidfd, no polling). When the process is already
// gone, or pid names a process that started well after the session did
// (pid reuse: the start time of the latest session.started with an
// occurredAt is the reference), the session exits at once. Binding the
// same pid again does nothing.
//
// A session that has exited is bound again by a new live process (a
// session resumed by another process, e.g. claude --resume): its linger
// is cancelled, the new process is watched, and session.started with the
// new pid is folded and published (status idle). A dead or reused pid
// leaves an exited session as it is. session.started for an exited
// session cancels its linger the same way, before its pid is bound.
func (ss *Sessions) BindPID(id string, pid int) { ss.bindPID(id, pid, true, 0) }

// bindPID is BindPID; guard false skips the pid-reuse check, for a pid
// observed holding the session's journal open right now (BindHolder), or
// found by FindProcess; start, when not zero, is the process's
// Stat.StartTime as it was found: a pid that names another process now
// (reused meanwhile) is taken as gone.
func (ss *Sessions) bindPID(id string, pid int, guard bool, start uint64) {
	en := ss.m[id]
	if en == nil || pid <= 0 || en.pid == pid {
		return
	}
	st, err := proc.ReadStat(ss.procs.Root(), pid)
	if err == nil && start != 0 && st.StartTime != start {
		err = proc.ErrNoProcess
	}
	if err == nil && guard && !en.since.IsZero() {
		if at, serr := proc.StartedAtIn(ss.procs.Root(), st); serr == nil && at.After(en.since.Add(reuseSlack)) {
			ss.log.Debug("pid reused by a later process", "session", id, "pid", pid)
			err = proc.ErrNoProcess
		}
	}
	if !en.exitedAt.IsZero() {
		// Exited: only a live process takes the session up again.
		if err != nil {
			ss.log.Debug("exited session not bound again", "session", id, "pid", pid, "err", err)
			return
		}
		ss.revive(en)
	}
	ss.unwatch(en)
	en.pid = pid
	if err == nil {
		ctx, cancel := context.WithCancel(ss.ctx)
		err = ss.procs.Watch(ctx, pid, st.StartTime, func() {
			ss.post(func() { ss.processExited(id, en, pid) })
		})
		if err == nil {
			en.unwatch = cancel
			ss.stopExpiry(en) // the process says when it ends
			if f := ss.pub.Session(id); f == nil || f.PID() != pid || f.Ended() != nil {
				// Show the process on the session (a holder found through
				// /proc is known nowhere else); one taken up again after an
				// exit also becomes idle (the fold does that).
				ss.Event(id, en.harness, agentbridge.Event{Kind: agentbridge.KindSessionStarted, PID: pid})
			}
			return
		}
		cancel()
	}
	if errors.Is(err, proc.ErrNoProcess) {
		ss.processExited(id, en, pid)
		return
	}
	ss.log.Debug("cannot watch process", "session", id, "pid", pid, "err", err)
}

// revive undoes an exit: the linger is cancelled and the old process
// forgotten, so that a new one can be bound.
func (ss *Sessions) revive(en *entry) {
	if en.timer != nil {
		en.timer.Stop()
		delete(ss.timers, en.timer)
		en.timer = nil
	}
	en.exitedAt = time.Time{}
	ss.unwatch(en)
	en.pid = 0
	en.since = time.Time{}
}

// processExited reports agent.exited for a session whose process pid
// ended, unless the session changed meanwhile (another process bound, or
// already exited).
func (ss *Sessions) processExited(id string, en *entry, pid int) {
	if ss.m[id] != en || !en.exitedAt.IsZero() || en.pid != pid {
		return
	}
	ss.log.Debug("the session's process ended", "session", id, "pid", pid)
	en.unwatch = nil
	ss.Event(id, en.harness, agentbridge.Event{Kind: agentbridge.KindAgentExited})
}

// BindHolder binds the session to the agent's process writing its journal
// (found through /proc/*/fd and fdinfo: open for writing, and matching
// FollowConfig.Agent), if exactly one other process does. Readers (tail
// -f, less, cp, an editor) are never bound, so their exit never marks
// the session exited. Call it
// once when a journal's session first appears. One pass over /proc serves
// every journal of a scan, and every journal that appeared in one wake
// (the lookup runs at Idle), so a burst of new journals costs one pass.
func (ss *Sessions) BindHolder(id, path string) {
	en := ss.m[id]
	if en == nil || en.pid != 0 || !en.exitedAt.IsZero() {
		return
	}
	if ss.live {
		if ss.holders == nil {
			ss.holders = map[string]string{}
		}
		ss.holders[id] = path
		return
	}
	if k, err := statKey(path); err == nil {
		ss.bindHeld(id, ss.heldFiles()[k])
	}
}

func (ss *Sessions) bindHeld(id string, pids []int) {
	ss.log.Debug("journal holders", "session", id, "pids", pids)
	if pid := soleWriter(ss.procs.Root(), pids); pid > 0 {
		ss.bindPID(id, pid, false, 0) // holding the journal now: not a reused pid
	}
}

// bindPendingHolders makes the one /proc pass for the journals that
// appeared since the last Idle.
func (ss *Sessions) bindPendingHolders() {
	names := map[string]bool{}
	for _, p := range ss.holders {
		names[filepath.Base(p)] = true
	}
	held, err := proc.Writers(ss.procs.Root(), func(target string) bool { return names[filepath.Base(target)] }, ss.agent)
	if err != nil {
		ss.log.Debug("cannot list open files", "err", err)
	}
	for _, id := range slices.Sorted(maps.Keys(ss.holders)) {
		if k, err := statKey(ss.holders[id]); err == nil {
			if en := ss.m[id]; en != nil && en.pid == 0 && en.exitedAt.IsZero() {
				ss.bindHeld(id, held[k])
			}
		}
	}
	clear(ss.holders)
}

// HeldOpen reports whether the agent's process holds the file open for
// writing (as BindHolder finds it). It is the default TailConfig.Recent
// under Follow: an old journal whose agent is still running is read at
// the scan. One pass over /proc serves a scan.
func (ss *Sessions) HeldOpen(path string, info fs.FileInfo) bool {
	k, ok := proc.KeyOf(info)
	return ok && len(ss.heldFiles()[k]) > 0
}

// Holder returns the agent's process writing the journal at path now, as
// BindHolder finds it (soleWriter), or 0 when no process or several do; for a source
// that needs the pid while it reads the journal. During a scan one pass
// over /proc serves every journal; afterwards each call costs one pass,
// so call it once when a journal appears.
func (ss *Sessions) Holder(path string) int {
	var pids []int
	if !ss.live {
		if k, err := statKey(path); err == nil {
			pids = ss.heldFiles()[k]
		}
	} else {
		var err error
		if pids, err = proc.FindWriters(ss.procs.Root(), path, ss.agent); err != nil && !errors.Is(err, fs.ErrNotExist) {
			ss.log.Debug("cannot find the journal's process", "path", path, "err", err)
		}
	}
	return soleWriter(ss.procs.Root(), pids)
}

func (ss *Sessions) heldFiles() map[proc.FileKey][]int {
	if ss.held == nil && !ss.heldErr {
		held, err := proc.Writers(ss.procs.Root(), func(target string) bool {
			return strings.HasSuffix(target, ".jsonl")
		}, ss.agent)
		if err != nil {
			ss.log.Debug("cannot list open files", "err", err)
			ss.heldErr = true
		}
		ss.held = held
	}
	return ss.held
}

func (ss *Sessions) unwatch(en *entry) {
	if en.unwatch != nil {
		en.unwatch()
		en.unwatch = nil
	}
}
