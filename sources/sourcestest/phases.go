package sourcestest

import (
	"fmt"
	"strings"

	"github.com/agentbridge/agentbridge"
)

// The states of a recording's phases, and the two this package adds.
const (
	Ready   = "ready"   // idle or done
	Working = "working" // running
	Waiting = "waiting" // waiting or blocked
	Exited  = "exited"  // exited: a process_exited phase
	Gone    = "gone"    // the session left the hub: a transcript_removed phase
)

// State maps a session's status, and whether it has ended, to a
// recording's state: idle is "ready", running is "working", waiting and
// blocked are "waiting", an ended session is "exited", and "" (the session
// left the hub) is "gone".
func State(st agentbridge.Status, ended bool) string {
	switch {
	case st == "":
		return Gone
	case ended:
		return Exited
	case st == agentbridge.StatusIdle:
		return Ready
	case st == agentbridge.StatusRunning:
		return Working
	case st == agentbridge.StatusWaiting, st == agentbridge.StatusBlocked:
		return Waiting
	}
	return string(st)
}

// Checked says which phases CheckPhases checks and how.
type Checked struct {
	// Exits: the source reports a session's end without a process (from
	// its journal), so a process_exited phase expects the status exited.
	// When false, process_exited phases are skipped and exited statuses
	// are not part of the sequence.
	Exits bool
}

// CheckPhases compares the status changes a source produced with the
// phases of a recording and returns what does not match (empty when all
// do) and notes on what it did not check.
//
// Phases that describe the recorder's own row for a process with no file
// yet (named presession_*, or with a session_id_prefix) have no
// counterpart and are skipped, as are the kinds a replay without
// processes cannot see (pid_discovered, transcript_new, parent_linked,
// transcript_removed) and process_exited unless c.Exits. Every other phase
// is checked, strictly and in order: each session's phases must all be
// found, in their order, in that session's sequence of states (statuses
// mapped by State, repeats folded). A phase whose state is the one the
// previous phase of its session matched holds it (a "stays ready" window)
// rather than waiting for the state to be entered again. A phase's
// invariants "no state_transition to <state>" and "no transcript_removed"
// are checked from its match up to the next phase of its session (or the
// end); when that next phase enters the banned state, it must end the
// held state for good: the session may not return to the held state
// before the phase after it (or the end), so that a turn that ends and
// starts again while it should have stayed working is caught. A phase goes to the session named by same_session_as, else a new
// session (the next one born, in order of appearance) when new_session or
// when relative_to names no phase of a known session, else the session of
// its relative_to phase.
func CheckPhases(phases []Phase, trans []Transition, c Checked) (problems, notes []string) {
	seqs, born := sequences(trans, c)
	sessionOf := map[string]string{} // phase name → session
	used := map[string]bool{}
	next := func() string {
		for _, id := range born {
			if !used[id] {
				used[id] = true
				return id
			}
		}
		return ""
	}
	type matched struct {
		p     Phase
		state string
		pos   int
	}
	bySession := map[string][]matched{}
	pos := map[string]int{}
	for _, p := range phases {
		state := p.State
		switch {
		case strings.HasPrefix(p.Name, "presession") || p.SessionIDPrefix != "":
			notes = append(notes, fmt.Sprintf("phase %s: the recorder's row for a process without a journal; skipped", p.Name))
			continue
		case state == "" && p.Kind == "process_exited" && c.Exits:
			state = Exited
		case state == "":
			notes = append(notes, fmt.Sprintf("phase %s (%s): not visible in a replay; skipped", p.Name, p.Kind))
			continue
		}
		var id string
		switch {
		case p.SameSessionAs != "":
			var ok bool
			if id, ok = sessionOf[p.SameSessionAs]; !ok {
				problems = append(problems, fmt.Sprintf("phase %s: same_session_as %q names no checked phase", p.Name, p.SameSessionAs))
				continue
			}
		case p.NewSession:
			id = next()
		default:
			if prev, ok := sessionOf[p.RelativeTo]; ok && !p.NewSession {
				id = prev
			} else {
				id = next()
			}
		}
		if id == "" {
			problems = append(problems, fmt.Sprintf("phase %s (%s): no session for it (sessions seen: %v)", p.Name, state, born))
			continue
		}
		sessionOf[p.Name] = id
		seq := seqs[id]
		at, ok := pos[id]
		if !ok {
			at = -1
		}
		found := -1
		if at >= 0 && seq[at] == state {
			found = at // holds the state it is in
		} else {
			for i := at + 1; i < len(seq); i++ {
				if seq[i] == state {
					found = i
					break
				}
			}
		}
		if found < 0 {
			problems = append(problems, fmt.Sprintf("phase %s: session %s never becomes %s after its phase at position %d; its states: %v",
				p.Name, id, state, at, seq))
			continue
		}
		pos[id] = found
		bySession[id] = append(bySession[id], matched{p, state, found})
	}
	for id, ms := range bySession {
		seq := seqs[id]
		for i, m := range ms {
			end := len(seq)
			if i+1 < len(ms) {
				end = ms[i+1].pos
			}
			for _, inv := range m.p.Invariants {
				banned, ok := invariantState(inv)
				if !ok {
					notes = append(notes, fmt.Sprintf("phase %s: invariant %q not checked", m.p.Name, inv))
					continue
				}
				if j := index(seq, m.pos+1, end, banned); j >= 0 {
					problems = append(problems, fmt.Sprintf("phase %s: invariant %q broken: session %s went %s at position %d; its states: %v",
						m.p.Name, inv, id, banned, j, seq))
					continue
				}
				// The next phase entering the banned state ends this one
				// for good: the session must not slip back into this
				// phase's state and out again before the phase after.
				if i+1 < len(ms) && ms[i+1].state == banned {
					end2 := len(seq)
					if i+2 < len(ms) {
						end2 = ms[i+2].pos
					}
					if j := index(seq, ms[i+1].pos+1, end2, m.state); j >= 0 {
						problems = append(problems, fmt.Sprintf("phase %s: invariant %q broken: session %s went %s again at position %d, after phase %s ended it; its states: %v",
							m.p.Name, inv, id, m.state, j, ms[i+1].p.Name, seq))
					}
				}
			}
		}
	}
	return problems, notes
}

// index returns the first i in [from, to) with seq[i] == st, or -1.
func index(seq []string, from, to int, st string) int {
	for i := from; i < to && i < len(seq); i++ {
		if seq[i] == st {
			return i
		}
	}
	return -1
}

// invariantState reads "no state_transition to <state>[ for …]" and "no
// transcript_removed[ for …]".
func invariantState(inv string) (string, bool) {
	if rest, ok := strings.CutPrefix(inv, "no state_transition to "); ok {
		w, _, _ := strings.Cut(rest, " ")
		return w, w == Ready || w == Working || w == Waiting
	}
	if strings.HasPrefix(inv, "no transcript_removed") {
		return Gone, true
	}
	return "", false
}

// sequences folds the transitions into each session's sequence of states
// (repeats folded; exited left out unless c.Exits) and lists the sessions
// in the order they appeared.
func sequences(trans []Transition, c Checked) (map[string][]string, []string) {
	seqs := map[string][]string{}
	var born []string
	for _, tr := range trans {
		st := State(tr.Status, tr.Ended)
		if st == Exited && !c.Exits {
			continue
		}
		seq, seen := seqs[tr.Session]
		if !seen {
			if st == Gone {
				continue
			}
			born = append(born, tr.Session)
		}
		if len(seq) > 0 && seq[len(seq)-1] == st {
			continue
		}
		seqs[tr.Session] = append(seq, st)
	}
	return seqs, born
}
