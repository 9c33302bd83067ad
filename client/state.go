package client

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"

	"github.com/agentbridge/agentbridge"
)

// State is the list of sessions a stream implies: it applies reset,
// upsert and remove records (and keeps what harnesses records say), so
// that after the event with id N it holds exactly what GET /v1/sessions
// (with the same filters) returned at revision N. The zero State is empty
// and ready; it is not safe for concurrent use.
//
// Every source the bridge runs sends a reset when a stream starts afresh,
// so its sessions are always replaced; a source that a restarted bridge no
// longer runs sends nothing, and its sessions stay until Load (fetch the
// snapshot after a restart that may have changed the configuration).
type State struct {
	rev       uint64
	sources   map[srcKey]map[string]agentbridge.Entry // (host, source) → id → snapshot and activity
	harnesses map[string][]string                     // source → enabled harness ids
}

// srcKey names the sessions of one source on one host ("" for the bridge's
// own): a reset replaces those only.
type srcKey struct{ host, source string }

// Load starts the state from a snapshot: follow the stream with Since set
// to l.Revision to keep it exact.
func (s *State) Load(l SessionList) {
	s.rev = l.Revision
	s.sources = map[srcKey]map[string]agentbridge.Entry{}
	for _, e := range l.Sessions {
		s.put(srcKey{e.Host, e.Source}, e.Snapshot, e.Activity, e.Ended)
	}
}

// Revision is the id of the last event applied (or the revision loaded).
func (s *State) Revision() uint64 { return s.rev }

// Sessions returns every session, sorted by host (the bridge's own
// first), source, then id, as GET /v1/sessions does; never nil.
func (s *State) Sessions() []agentbridge.Entry {
	out := []agentbridge.Entry{}
	for k, m := range s.sources {
		for _, e := range m {
			out = append(out, agentbridge.Entry{Source: k.source, Host: k.host, Snapshot: e.Snapshot.Clone(), Activity: e.Activity, Ended: e.Ended})
		}
	}
	slices.SortFunc(out, func(a, b agentbridge.Entry) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Source, b.Source), cmp.Compare(a.Snapshot.ID, b.Snapshot.ID))
	})
	return out
}

// Session returns one session of the bridge's own.
func (s *State) Session(source, id string) (agentbridge.Snapshot, bool) {
	return s.SessionOn("", source, id)
}

// SessionOn returns one session of host (a remote's id; "" for the
// bridge's own).
func (s *State) SessionOn(host, source, id string) (agentbridge.Snapshot, bool) {
	e, ok := s.sources[srcKey{host, source}][id]
	return e.Snapshot.Clone(), ok
}

// EntryOn returns one session of host (a remote's id; "" for the
// bridge's own) with what the bridge shows beside its snapshot.
func (s *State) EntryOn(host, source, id string) (agentbridge.Entry, bool) {
	e, ok := s.sources[srcKey{host, source}][id]
	e.Snapshot = e.Snapshot.Clone()
	return e, ok
}

// Ended returns how one session of the bridge's own ended (nil: it has
// not); it is shared: do not change it.
func (s *State) Ended(source, id string) *agentbridge.Ended {
	return s.sources[srcKey{"", source}][id].Ended
}

// Activity returns one session's activity (nil: none known); it is
// shared: do not change it.
func (s *State) Activity(source, id string) *agentbridge.Activity {
	return s.sources[srcKey{"", source}][id].Activity
}

// Harnesses returns the enabled harnesses of source as its last harnesses
// record said; ok is false when none came.
func (s *State) Harnesses(source string) (ids []string, ok bool) {
	ids, ok = s.harnesses[source]
	return slices.Clone(ids), ok
}

// Apply folds one event into the state. Diagnostics, lifecycle records and
// unknown names change only the revision. Data that does not fit its
// record wraps ErrBadEvent and leaves the state as it was.
func (s *State) Apply(ev Event) error {
	var d struct {
		Source           string                 `json:"source"`
		Host             string                 `json:"host"`
		Sessions         []agentbridge.Snapshot `json:"sessions"`
		Snapshot         *agentbridge.Snapshot  `json:"snapshot"`
		SessionID        string                 `json:"sessionId"`
		EnabledHarnesses []string               `json:"enabledHarnesses"`
		Activity         json.RawMessage        `json:"activity"` // reset: by session id; upsert: the session's
		Ended            json.RawMessage        `json:"ended"`    // reset: by session id; upsert: the session's
	}
	switch ev.Name {
	case agentbridge.RecordReset, agentbridge.RecordUpsert, agentbridge.RecordRemove, agentbridge.RecordHarnesses:
		if err := json.Unmarshal(ev.Data, &d); err != nil || d.Source == "" {
			return badEvent("%s %d has no source or does not decode", ev.Name, ev.ID)
		}
	}
	k := srcKey{d.Host, d.Source}
	switch ev.Name {
	case agentbridge.RecordReset:
		var acts map[string]*agentbridge.Activity
		if len(d.Activity) > 0 && json.Unmarshal(d.Activity, &acts) != nil {
			return badEvent("reset %d has an activity that does not decode", ev.ID)
		}
		var endeds map[string]*agentbridge.Ended
		if len(d.Ended) > 0 && json.Unmarshal(d.Ended, &endeds) != nil {
			return badEvent("reset %d has an end that does not decode", ev.ID)
		}
		if s.sources == nil {
			s.sources = map[srcKey]map[string]agentbridge.Entry{}
		}
		delete(s.sources, k)
		for _, snap := range d.Sessions {
			s.put(k, snap, acts[snap.ID], endeds[snap.ID])
		}
	case agentbridge.RecordUpsert:
		if d.Snapshot == nil || d.Snapshot.ID == "" {
			return badEvent("upsert %d has no snapshot", ev.ID)
		}
		var act *agentbridge.Activity
		if len(d.Activity) > 0 && json.Unmarshal(d.Activity, &act) != nil {
			return badEvent("upsert %d has an activity that does not decode", ev.ID)
		}
		var ended *agentbridge.Ended
		if len(d.Ended) > 0 && json.Unmarshal(d.Ended, &ended) != nil {
			return badEvent("upsert %d has an end that does not decode", ev.ID)
		}
		s.put(k, *d.Snapshot, act, ended)
	case agentbridge.RecordRemove:
		if d.SessionID == "" {
			return badEvent("remove %d has no session id", ev.ID)
		}
		delete(s.sources[k], d.SessionID)
		if len(s.sources[k]) == 0 {
			delete(s.sources, k)
		}
	case agentbridge.RecordHarnesses:
		if d.Host != "" {
			break // the bridge's own switches are what its harnesses records say
		}
		if s.harnesses == nil {
			s.harnesses = map[string][]string{}
		}
		s.harnesses[d.Source] = append([]string{}, d.EnabledHarnesses...)
	}
	s.rev = max(s.rev, ev.ID)
	return nil
}

func (s *State) put(k srcKey, snap agentbridge.Snapshot, act *agentbridge.Activity, ended *agentbridge.Ended) {
	if s.sources == nil {
		s.sources = map[srcKey]map[string]agentbridge.Entry{}
	}
	m := s.sources[k]
	if m == nil {
		m = map[string]agentbridge.Entry{}
		s.sources[k] = m
	}
	m[snap.ID] = agentbridge.Entry{Source: k.source, Host: k.host, Snapshot: snap, Activity: act, Ended: ended}
}

// Clone returns a copy that does not share the maps of s.
func (s *State) Clone() *State {
	c := &State{rev: s.rev, harnesses: maps.Clone(s.harnesses)}
	if s.sources != nil {
		c.sources = make(map[srcKey]map[string]agentbridge.Entry, len(s.sources))
		for k, m := range s.sources {
			c.sources[k] = maps.Clone(m)
		}
	}
	return c
}
