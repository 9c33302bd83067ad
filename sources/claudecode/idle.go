package claudecode

import "time"

// idleGrace is how long the registry must show a process idle, with its
// turn still open in the transcript, before the turn is ended. Claude Code
// turns the registry idle a few milliseconds before it writes
// turn_duration; the grace lets the journal's own end win that race. An
// Escape pressed before the model's first output writes no end at all:
// only the registry going busy → idle tells.
const idleGrace = 1500 * time.Millisecond

// watchIdle ends the open turn of rp's session after idleGrace if the
// registry, which said busy during the turn, still shows the process idle
// on the same session and the turn is still the one open now. One one-shot timer per idle report; it runs
// its check on the source's goroutine (a Post after the source stopped is
// dropped).
func (h *handler) watchIdle(rp *regProc, se *session) {
	turn := se.m.Turn()
	if rp.state.Status != RegistryIdle || !se.m.IdleEnds() {
		return
	}
	pid, id, at := rp.entry.PID, rp.id, rp.entry.Changed
	time.AfterFunc(idleGrace, func() {
		h.ss.Post(func() {
			cur, se := h.regs[pid], h.sessions[id]
			if cur == nil || cur.id != id || cur.state.Status != RegistryIdle || se == nil || se.pid != pid {
				return
			}
			h.publish(id, se, se.m.EndIdle(turn, at))
		})
	})
}

// endLateTails exits again the sessions that lines of their exited
// process, read after the exit, moved (Mapper.LateExit): at the end of a
// batch, once the tail is read. (A flag check per session: the exit may
// be the mapper's own or one it read from the fold's view.)
func (h *handler) endLateTails() {
	for id, se := range h.sessions {
		h.publish(id, se, se.m.LateExit())
	}
}
