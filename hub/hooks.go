package hub

import (
	"maps"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

// Hook timing and bounds.
const (
	// HookHold is how long a hook for a session the source has not
	// reported yet is held: an agent runs SessionStart and
	// UserPromptSubmit hooks before its journal has a line.
	HookHold = 5 * time.Second
	// MaxHeldHooks bounds the held hooks of one source; the oldest go first.
	MaxHeldHooks = 64
	// HookFresh is how long after its latest hook a source's
	// observes.waiting says "hooks".
	HookFresh = 24 * time.Hour
)

// heldHook is a hook for a session the source has not reported yet.
type heldHook struct {
	id   string
	hook fold.Hook
	at   time.Time
}

// Hook folds a hook's signal into a session of a source, beside the
// journal's events, in the session's one fold (fold.Session.Hook; the
// fold the source's store keeps, a running source's or a push source's,
// in or out of view): the
// lifecycle events it makes (wait.started, wait.finished) are streamed as
// the source's own, then the upsert, committed at once (with what the
// source folded before, as a Publisher call is). A hook for a session the
// source has not reported yet is held for HookHold and folded when the
// session appears. A session built again from its journal (Rescan,
// Restart) starts without what hooks told. h.At is stamped with the hub's
// clock when zero. It fails with ErrUnknownSource only; a hook that
// changes nothing is no error.
func (h *Hub) Hook(sourceID, sessionID string, hk fold.Hook) error {
	h.mu.Lock()
	s, ok := h.sources[sourceID]
	if !ok || s.pub == nil {
		h.mu.Unlock()
		return ErrUnknownSource
	}
	now := h.now()
	if hk.At == 0 {
		hk.At = now.UnixMilli()
	}
	s.hooked = now
	pub := s.pub
	// the folds are the source's store's, which commits under h.mu itself
	h.mu.Unlock()
	h.met.hook(sourceID, pub.hook(sessionID, hk, now))
	return nil
}

// pruneHeld drops the held hooks older than HookHold.
func pruneHeld(held []heldHook, now time.Time) []heldHook {
	n := 0
	for _, hh := range held {
		if now.Sub(hh.at) < HookHold {
			held[n] = hh
			n++
		}
	}
	clear(held[n:])
	return held[:n]
}

// hook folds a hook into a session of a source and commits what
// it changed at once; it holds a hook for a session not reported yet. It
// returns the result the metric counts.
func (p *publisher) hook(id string, hk fold.Hook, now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = pruneHeld(p.held, now)
	w := p.cur()[id]
	if w == nil {
		if len(p.held) >= MaxHeldHooks {
			p.held = p.held[1:]
		}
		p.held = append(p.held, heldHook{id: id, hook: hk, at: now})
		return "held"
	}
	if !p.hookInto(w, hk) {
		return "unchanged"
	}
	p.commit(false)
	return "folded"
}

// hookInto folds hk into w's fold and queues the lifecycle records it
// made and their facts (Fact.Hook), as fold does for an event; p.mu must
// be held.
//
// A hook never writes the fold a source was handed: a running source
// reads it on its own goroutine without p.mu (Sink.Session) while a hook
// comes in on an HTTP handler's. It folds into a copy, which replaces the
// fold under p.mu; the source's next Sink.Session returns it. Hooks are
// few (a prompt, a tool call), so the copy costs the journal's path
// nothing.
func (p *publisher) hookInto(w *work, hk fold.Hook) bool {
	f := w.fold.Clone()
	evs := f.Hook(hk)
	w.fold = f // even with no records: a hook may change the hook state only
	if len(evs) == 0 {
		return false
	}
	if p.h.rec != nil {
		for i := range evs {
			p.record(w, &evs[i], evs[i].OccurredAt, true)
		}
	}
	if p.scan != nil {
		return true // built aside: the scan's reset shows it
	}
	w.hidden = false
	if !w.aside {
		if w.ref == nil {
			w.ref = &incarnation{}
		}
		for _, e := range evs {
			p.pend = append(p.pend, op{kind: opLifecycle, w: w, ref: w.ref, id: w.id,
				data: encode(lifecycleData{Source: p.src.info.ID, SessionID: w.id, Event: e})})
		}
	}
	p.touch(w)
	return true
}

// foldHeld folds the held hooks of w, in the order they were taken, once
// its session is reported; p.mu must be held.
func (p *publisher) foldHeld(w *work) {
	if len(p.held) == 0 {
		return
	}
	p.held = pruneHeld(p.held, p.h.now())
	n := 0
	for _, hh := range p.held {
		if hh.id != w.id {
			p.held[n] = hh
			n++
			continue
		}
		p.hookInto(w, hh.hook)
	}
	clear(p.held[n:])
	p.held = p.held[:n]
}

// observes is the source's Observes as GET /v1/sources shows it: waiting
// is observed from hooks while its hooks are fresh.
func (s *source) observes(now time.Time) map[string]agentbridge.Observe {
	if s.hooked.IsZero() || now.Sub(s.hooked) >= HookFresh {
		return s.info.Observes
	}
	o := maps.Clone(s.info.Observes)
	if o == nil {
		o = map[string]agentbridge.Observe{}
	}
	o["waiting"] = agentbridge.Observe{How: agentbridge.Observed, From: "hooks"}
	return o
}

// hookRefusalGap is how often the same refusal of a source is recorded:
// an agent whose every hook is refused would otherwise flood the
// diagnostics.
const hookRefusalGap = 10 * time.Second

// HookRefused records a diagnostic for a hook payload that was refused,
// at most once per code and source every hookRefusalGap. An unknown source
// is ignored.
func (h *Hub) HookRefused(sourceID string, d agentbridge.Diagnostic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sources[sourceID]
	if !ok {
		return
	}
	now := h.now()
	h.met.hook(sourceID, "refused")
	if d.Code == s.refusedCode && now.Sub(s.refusedAt) < hookRefusalGap {
		return
	}
	s.refusedCode, s.refusedAt = d.Code, now
	t := h.begin(s)
	if issues := t.opDiagnostic("$", d); len(issues) == 0 {
		h.commit(t)
	}
}
