package hub

import (
	"maps"
	"slices"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/project"
)

// emptyFilter reports whether f selects everything.
func emptyFilter(f agentbridge.Filter) bool {
	return len(f.Sources) == 0 && len(f.Harnesses) == 0 && len(f.Statuses) == 0 && len(f.Hosts) == 0 && f.Project == "" && f.AncestorPID == 0
}

// sourceOK reports whether records of source id are selected.
func sourceOK(f agentbridge.Filter, id string) bool {
	return len(f.Sources) == 0 || slices.Contains(f.Sources, id)
}

// hostOK reports whether records of host ("" for this bridge) are selected.
func hostOK(f agentbridge.Filter, host string) bool {
	if len(f.Hosts) == 0 {
		return true
	}
	if host == "" {
		host = agentbridge.LocalHost
	}
	return slices.Contains(f.Hosts, host)
}

// selects reports whether the records of source s are selected.
func selects(f agentbridge.Filter, s *source) bool {
	return sourceOK(f, s.info.ID) && hostOK(f, s.host)
}

// maxCache bounds a matcher's memo of project and ancestry answers.
const maxCache = 4096

// matcher evaluates a filter, remembering project and ancestry answers
// (they read the file system and /proc) per cwd and pid. It is not safe for
// concurrent use, except lookup.
//
// Nothing reads the file system or /proc under a lock: a caller that holds
// one asks the matcher which answers it lacks (need), lets go, looks them up
// (lookup), then tells the matcher (learn) before it matches. match looks
// an answer up itself only when it was not learnt first, which callers
// under a lock never let happen.
type matcher struct {
	f        agentbridge.Filter
	procRoot string
	proj     map[string]bool
	anc      map[int]bool
}

func newMatcher(f agentbridge.Filter, procRoot string) *matcher {
	return &matcher{f: f, procRoot: procRoot, proj: map[string]bool{}, anc: map[int]bool{}}
}

// facts are answers of the file system and /proc, or questions to them
// (every value false): per cwd, whether it is in the filter's project; per
// pid, whether its process descends from the filter's ancestor.
type facts struct {
	proj map[string]bool
	anc  map[int]bool
}

// none reports whether there is nothing to ask.
func (q facts) none() bool { return len(q.proj) == 0 && len(q.anc) == 0 }

// plain reports whether the session s of source on host passes the parts
// of the filter that need no I/O.
func (m *matcher) plain(host, source string, s *agentbridge.Snapshot) bool {
	f := m.f
	if !sourceOK(f, source) || !hostOK(f, host) {
		return false
	}
	if host != "" && (f.Project != "" || f.AncestorPID != 0) {
		return false // another machine's paths and processes
	}
	if len(f.Harnesses) > 0 && !slices.Contains(f.Harnesses, s.Harness) {
		return false
	}
	return len(f.Statuses) == 0 || slices.Contains(f.Statuses, s.Status)
}

// match reports whether the session s of source on host ("" for this
// bridge) selects under the filter.
func (m *matcher) match(host, source string, s *agentbridge.Snapshot) bool {
	if !m.plain(host, source, s) {
		return false
	}
	if m.f.Project == "" && m.f.AncestorPID == 0 {
		return true
	}
	if ok, known := m.known(s); known {
		return ok
	}
	var q facts
	m.need(&q, host, source, s)
	m.learn(m.lookup(q))
	ok, _ := m.known(s)
	return ok
}

// known reports whether s, which passes plain, is in the project and
// descends from the ancestor, by the answers remembered; known is false
// when an answer that decides it is missing.
func (m *matcher) known(s *agentbridge.Snapshot) (ok, known bool) {
	if m.f.Project != "" {
		if s.Cwd == "" {
			return false, true
		}
		in, seen := m.proj[s.Cwd]
		if !seen {
			return false, false
		}
		if !in {
			return false, true
		}
	}
	if m.f.AncestorPID != 0 {
		if s.PID == 0 {
			return false, true
		}
		in, seen := m.anc[s.PID]
		return in, seen
	}
	return true, true
}

// need adds to q what the matcher must learn before it can match the
// session s of source on host without I/O.
func (m *matcher) need(q *facts, host, source string, s *agentbridge.Snapshot) {
	if m.f.Project == "" && m.f.AncestorPID == 0 || !m.plain(host, source, s) {
		return
	}
	if m.f.Project != "" {
		if s.Cwd == "" {
			return // out of the project whatever its ancestry
		}
		in, seen := m.proj[s.Cwd]
		if seen && !in {
			return
		}
		if !seen {
			if q.proj == nil {
				q.proj = map[string]bool{}
			}
			q.proj[s.Cwd] = false
		}
	}
	if m.f.AncestorPID != 0 && s.PID != 0 {
		if _, seen := m.anc[s.PID]; !seen {
			if q.anc == nil {
				q.anc = map[int]bool{}
			}
			q.anc[s.PID] = false
		}
	}
}

// lookup answers q from the file system and /proc. It reads nothing of the
// matcher that changes, so it may run while another goroutine holding the
// matcher's lock uses it; it must run with no lock held.
func (m *matcher) lookup(q facts) facts {
	a := facts{proj: make(map[string]bool, len(q.proj)), anc: make(map[int]bool, len(q.anc))}
	for cwd := range q.proj {
		a.proj[cwd] = project.Contains(m.f.Project, cwd)
	}
	for pid := range q.anc {
		a.anc[pid] = proc.Descends(m.procRoot, pid, m.f.AncestorPID)
	}
	return a
}

// learn remembers the answers a. The memo is emptied first when a would
// take it over maxCache, never afterwards: what was just learnt stays
// until the next learn.
func (m *matcher) learn(a facts) {
	if len(m.proj)+len(a.proj) > maxCache {
		clear(m.proj)
	}
	if len(m.anc)+len(a.anc) > maxCache {
		clear(m.anc)
	}
	maps.Copy(m.proj, a.proj)
	maps.Copy(m.anc, a.anc)
}

// view is what one filtered subscriber has been shown: per source, whether
// it knows exactly which sessions the client holds (after a reset) and
// which ones it does (true) or does not (false) hold.
type view struct {
	m   *matcher
	vis map[string]*shown
}

type shown struct {
	known bool // after a reset: an id missing from ids is not held
	ids   map[string]bool
}

func newView(f agentbridge.Filter, procRoot string) *view {
	return &view{m: newMatcher(f, procRoot), vis: map[string]*shown{}}
}

func (v *view) src(host, id string) *shown {
	k := sourceKey(host, id)
	s := v.vis[k]
	if s == nil {
		s = &shown{ids: map[string]bool{}}
		v.vis[k] = s
	}
	return s
}

// need adds to q what the view must learn before it can turn e into
// records without I/O.
func (v *view) need(q *facts, e *entry) {
	switch e.rec.Name {
	case agentbridge.RecordReset:
		for i := range e.sessions {
			v.m.need(q, e.host, e.source, &e.sessions[i])
		}
	case agentbridge.RecordUpsert, agentbridge.RecordLifecycle:
		v.m.need(q, e.host, e.source, e.snap)
	}
}

// ready reports whether the view can turn e into records without I/O.
func (v *view) ready(e *entry) bool {
	var q facts
	v.need(&q, e)
	return q.none()
}

// needCapture adds to q what the view must learn before initial(c).
func (v *view) needCapture(q *facts, c capture) {
	for i := range c.sessions {
		v.m.need(q, c.host, c.source, &c.sessions[i])
	}
}

// mayHold reports whether the client may hold the session: it does, or
// the view cannot know.
func (s *shown) mayHold(id string) bool {
	held, seen := s.ids[id]
	return held || (!seen && !s.known)
}

// records turns a committed entry into what this subscriber sees.
func (v *view) records(e *entry) []Record {
	if !sourceOK(v.m.f, e.source) || !hostOK(v.m.f, e.host) {
		return nil
	}
	sh := v.src(e.host, e.source)
	switch e.rec.Name {
	case agentbridge.RecordReset:
		keep := make([]agentbridge.Snapshot, 0, len(e.sessions))
		var acts map[string]*agentbridge.Activity
		var endeds map[string]*agentbridge.Ended
		sh.known = true
		clear(sh.ids)
		for i := range e.sessions {
			if v.m.match(e.host, e.source, &e.sessions[i]) {
				keep = append(keep, e.sessions[i])
				acts = addActivity(acts, e.sessions[i].ID, e.acts[e.sessions[i].ID])
				endeds = addEnded(endeds, e.sessions[i].ID, e.endeds[e.sessions[i].ID])
				sh.ids[e.sessions[i].ID] = true
			}
		}
		if len(keep) == len(e.sessions) {
			return []Record{e.rec}
		}
		return []Record{{Rev: e.rec.Rev, Name: agentbridge.RecordReset, Data: encode(resetData{Source: e.source, Host: e.host, Sessions: keep, Activity: acts, Ended: endeds})}}
	case agentbridge.RecordUpsert:
		if v.m.match(e.host, e.source, e.snap) {
			sh.ids[e.sessionID] = true
			return []Record{e.rec}
		}
		if !sh.mayHold(e.sessionID) {
			return nil
		}
		sh.forget(e.sessionID)
		return []Record{{Rev: e.rec.Rev, Name: agentbridge.RecordRemove, Data: encode(removeData{Source: e.source, Host: e.host, SessionID: e.sessionID})}}
	case agentbridge.RecordRemove:
		if !sh.mayHold(e.sessionID) {
			return nil
		}
		sh.forget(e.sessionID)
		return []Record{e.rec}
	case agentbridge.RecordLifecycle:
		// Shown when the client holds the session, or will after the
		// upsert that follows: a client filtered on "running" still learns
		// that its session's agent finished.
		if sh.mayHold(e.sessionID) || v.m.match(e.host, e.source, e.snap) {
			return []Record{e.rec}
		}
		return nil
	default: // diagnostic, harnesses
		return []Record{e.rec}
	}
}

// forget records that the client no longer holds id.
func (s *shown) forget(id string) {
	if s.known {
		delete(s.ids, id)
	} else {
		s.ids[id] = false
	}
}

// initial is the filtered form of a captured source state: a reset of the
// first MaxResetSessions matching sessions, then upserts for the rest.
func (v *view) initial(c capture) []Record {
	sh := v.src(c.host, c.source)
	sh.known = true
	clear(sh.ids)
	keep := make([]agentbridge.Snapshot, 0, len(c.sessions))
	for i := range c.sessions {
		if v.m.match(c.host, c.source, &c.sessions[i]) {
			keep = append(keep, c.sessions[i])
			sh.ids[c.sessions[i].ID] = true
		}
	}
	return initialRecords(c.host, c.source, keep, c.acts, c.endeds)
}
