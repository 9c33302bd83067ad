package sources

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentbridge/agentbridge"
)

// CodeFormatDrift is the diagnostic of a journal that stopped making sense
// to its source: the agent's format moved on (a renamed record type, a
// moved field). Its message names record kinds only, never content or
// paths.
const CodeFormatDrift = agentbridge.CodeFormatDrift

// The drift canary's thresholds. A read (one wake of the source, or the
// start-up scan) whose records are of kinds the source does not know, at
// least minUnknown of them and at least 1/unknownShare of the read, is
// drift; so is a session with minNoTurn records and no recognised turn.
const (
	minUnknown   = 4
	unknownShare = 4
	minNoTurn    = 24
	maxKinds     = 64 // kinds remembered (reported, or per session)
	maxKindLen   = 48
	maxNamed     = 8    // kinds named in one message
	maxSessions  = 4096 // sessions watched for a missing turn
)

// drift counts what a source's Record calls and turns say, between two
// reports (Sessions.Idle).
type drift struct {
	total    int
	unknown  map[string]int        // kind → records of it this read
	reported map[string]bool       // unknown kinds already reported
	sessions map[string]*sessDrift // by session id
}

type sessDrift struct {
	records  int
	turns    bool
	reported bool
	kinds    map[string]bool
}

// Record notes one journal record of session id (id "" when the record
// comes before the journal names its session) read by the source: kind
// is the record's type as the journal names it, and known says whether
// the source's mapping knows that kind (a known kind it skips on purpose
// is known). Sources that call it get the drift canary: Idle raises
// CodeFormatDrift when a read is mostly of unknown kinds, or a session
// has many records and no recognised turn (turn.started).
func (ss *Sessions) Record(id, kind string, known bool) {
	d := &ss.drift
	kind = kindName(kind)
	d.total++
	if !known {
		if d.unknown == nil {
			d.unknown = map[string]int{}
		}
		if _, ok := d.unknown[kind]; ok || len(d.unknown) < maxKinds {
			d.unknown[kind]++
		}
	}
	if id == "" {
		return
	}
	if d.sessions == nil {
		d.sessions = map[string]*sessDrift{}
	}
	s := d.sessions[id]
	if s == nil {
		if len(d.sessions) >= maxSessions {
			return // bounded: sessions past it are not watched for a missing turn
		}
		s = &sessDrift{kinds: map[string]bool{}}
		d.sessions[id] = s
	}
	s.records++
	if len(s.kinds) < maxKinds {
		s.kinds[kind] = true
	}
}

// turn notes that session id had a recognised turn.
func (d *drift) turn(id string) {
	if s := d.sessions[id]; s != nil {
		s.turns = true
	} else if len(d.sessions) < maxSessions {
		// the turn's event comes before its record is noted (Record)
		if d.sessions == nil {
			d.sessions = map[string]*sessDrift{}
		}
		d.sessions[id] = &sessDrift{turns: true, kinds: map[string]bool{}}
	}
}

// reread starts the counts of session id again, of every session when id
// is "" (its journal is read again from the start); what was reported
// stays reported.
func (d *drift) reread(id string) {
	for k, s := range d.sessions {
		if id == "" || k == id {
			s.records, s.turns = 0, false
			clear(s.kinds)
		}
	}
	if id == "" {
		d.total = 0
		clear(d.unknown)
	}
}

// forget drops what is known of session id (it left).
func (d *drift) forget(id string) { delete(d.sessions, id) }

// report returns the drift diagnostics of what was recorded since the last
// report, and starts a new read.
func (d *drift) report() []agentbridge.Diagnostic {
	var out []agentbridge.Diagnostic
	unknown := 0
	for _, n := range d.unknown {
		unknown += n
	}
	if unknown >= minUnknown && unknown*unknownShare >= d.total {
		var fresh []string
		for k := range d.unknown {
			if !d.reported[k] {
				fresh = append(fresh, k)
			}
		}
		if len(fresh) > 0 {
			if d.reported == nil || len(d.reported) >= maxKinds {
				d.reported = map[string]bool{}
			}
			for _, k := range fresh {
				d.reported[k] = true
			}
			out = append(out, agentbridge.Diagnostic{Code: CodeFormatDrift, Message: fmt.Sprintf(
				"%d of %d journal records read are of kinds this bridge does not know (%s): the agent's format may have changed",
				unknown, d.total, named(slices.Collect(maps.Keys(d.unknown))))})
		}
	}
	for _, s := range d.sessions {
		if s.turns || s.reported || s.records < minNoTurn {
			continue
		}
		s.reported = true
		if len(out) > 0 {
			continue // the unknown kinds said it: one diagnostic per read
		}
		out = append(out, agentbridge.Diagnostic{Code: CodeFormatDrift, Message: fmt.Sprintf(
			"a session has %d journal records but no turn this bridge recognises (kinds: %s): the agent's format may have changed",
			s.records, named(slices.Collect(maps.Keys(s.kinds))))})
	}
	d.total = 0
	clear(d.unknown)
	return out
}

// named lists kinds, sorted, at most maxNamed of them.
func named(kinds []string) string {
	slices.Sort(kinds)
	if len(kinds) > maxNamed {
		return strings.Join(kinds[:maxNamed], ", ") + fmt.Sprintf(", and %d more", len(kinds)-maxNamed)
	}
	return strings.Join(kinds, ", ")
}

// kindName keeps a record kind fit for a diagnostic: the characters of an
// identifier, bounded; anything else (content, a path) becomes "?".
func kindName(k string) string {
	if k == "" {
		return "(none)"
	}
	if len(k) > maxKindLen {
		return "?"
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return "?"
		}
	}
	return k
}

// versionSink is the part of a hub.Sink that keeps the agent versions a
// source saw; the hub's own Sink has it.
type versionSink interface {
	SawVersion(harness, version string)
}

// maxVersions bounds the versions one Sessions passes on.
const maxVersions = 64

// Version notes that a journal of harness names the agent CLI's version
// (Codex's cli_version, Claude Code's version, …): GET /v1/sources lists
// the versions seen beside the range the live suite tested. A version
// that is not a plain version string is dropped.
func (ss *Sessions) Version(harness, version string) {
	if !plainVersion(version) {
		return
	}
	key := harness + " " + version
	if ss.versions[key] {
		return
	}
	if ss.versions == nil || len(ss.versions) >= maxVersions {
		ss.versions = map[string]bool{}
	}
	ss.versions[key] = true
	if v, ok := ss.pub.(versionSink); ok {
		v.SawVersion(harness, version)
	}
}

// plainVersion reports whether v looks like a version: 1 to 64 bytes of
// digits, letters, '.', '-', '+' and '_', starting with a digit or 'v'.
func plainVersion(v string) bool {
	if v == "" || len(v) > 64 || !(v[0] >= '0' && v[0] <= '9' || v[0] == 'v') {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == '_') {
			return false
		}
	}
	return true
}
