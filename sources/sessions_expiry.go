package sources

import (
	"time"
)

// startLinger stops an exited session Linger after its exit.
func (ss *Sessions) startLinger(id string, en *entry, at time.Time) {
	en.exitedAt = at
	ss.stopExpiry(en)
	if ss.linger < 0 {
		return
	}
	left := at.Add(ss.linger).Sub(ss.now())
	if left <= 0 {
		if !ss.live {
			ss.drop(id, en) // exited long ago: not worth a reset entry
			ss.removeFromHub(id)
			return
		}
		left = 0
	}
	en.timer = ss.after(id, en, left, func() {
		en.timer = nil
		ss.Stop(id, "process exited")
	})
}

// after arms a one-shot timer of session id that runs f on the source's
// goroutine once d has passed, unless the timer was stopped meanwhile (it
// is no longer in ss.timers) or the session is no longer en; f runs with
// the timer already forgotten.
func (ss *Sessions) after(id string, en *entry, d time.Duration, f func()) *time.Timer {
	var tm *time.Timer
	tm = time.AfterFunc(d, func() {
		activity.timers.Add(1)
		ss.post(func() {
			if _, ok := ss.timers[tm]; !ok || ss.m[id] != en {
				return
			}
			delete(ss.timers, tm)
			f()
		})
	})
	ss.timers[tm] = struct{}{}
	return tm
}

// ExpireAfter makes sessions that are bound to no process and have not
// exited leave the hub once no event came for d (a journal no longer
// written, an agent gone without a trace); their state is kept, and the
// next event shows the session again, whole. 0 (the default of
// NewSessions) never expires; Follow uses TailConfig.Window. A session
// read at a scan counts as active at the scan. The check is a one-shot
// timer per session, armed at most once per d.
func (ss *Sessions) ExpireAfter(d time.Duration) { ss.expire = max(d, 0) }

// touch notes activity and arms the session's inactivity check.
func (ss *Sessions) touch(id string, en *entry) {
	if ss.expire <= 0 || en.unwatch != nil || !en.exitedAt.IsZero() {
		return
	}
	en.last = ss.now()
	if en.expiry == nil {
		ss.armExpiry(id, en, ss.expire)
	}
}

func (ss *Sessions) armExpiry(id string, en *entry, after time.Duration) {
	en.expiry = ss.after(id, en, after, func() {
		en.expiry = nil
		if en.unwatch != nil || !en.exitedAt.IsZero() || en.hidden {
			return
		}
		if left := en.last.Add(ss.expire).Sub(ss.now()); left > 0 {
			ss.armExpiry(id, en, left)
			return
		}
		en.hidden = true
		ss.log.Debug("session inactive: hidden until it is written again", "session", id)
		ss.pub.Hide(id)
	})
}

func (ss *Sessions) stopExpiry(en *entry) {
	if en.expiry != nil {
		en.expiry.Stop()
		delete(ss.timers, en.expiry)
		en.expiry = nil
	}
}

// close stops the linger timers and process watches when the source ends.
func (ss *Sessions) close() {
	for tm := range ss.timers {
		tm.Stop()
	}
	clear(ss.timers)
	for _, en := range ss.m {
		ss.unwatch(en)
	}
}
