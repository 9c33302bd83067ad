package kittest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// SplitBySize cuts a recording's transcript into its journals for agents
// whose records do not say where a session begins (Kiro CLI, Mistral
// Vibe): the recorded journals for which keep is true (the agent's own;
// not another agent's, not a subagent's, which the recordings lack) were
// concatenated whole in the order they first grew, each as long as its
// largest recorded size.
func SplitBySize(rec *sourcestest.Recording, keep func(recorded string) bool) func([]byte) ([]sourcestest.File, error) {
	return func(data []byte) ([]sourcestest.File, error) {
		var order []string
		size := map[string]int64{}
		for _, g := range rec.Growth {
			if !keep(g.Path) {
				continue
			}
			if _, ok := size[g.Session]; !ok {
				order = append(order, g.Session)
			}
			size[g.Session] = max(size[g.Session], g.Size)
		}
		var out []sourcestest.File
		var at int64
		for _, s := range order {
			end := at + size[s]
			if end > int64(len(data)) || data[end-1] != '\n' {
				return nil, fmt.Errorf("%s: journal %s does not end at a line's end at %d", rec.Name, s, end)
			}
			out = append(out, sourcestest.File{Session: s, Data: data[at:end]})
			at = end
		}
		if at != int64(len(data)) {
			return nil, fmt.Errorf("%s: %d bytes of the transcript belong to no recorded journal", rec.Name, int64(len(data))-at)
		}
		return out, nil
	}
}

// Drop removes the phases named in skip (phases whose journal the
// recordings lack) and re-anchors the phases that referred to one: the
// first phase with a state that names it (as same_session_as or
// relative_to) takes its place, its relative_to and new_session; later
// phases that name it as same_session_as name that heir instead. Phases
// without a state (pid_discovered, process_exited, …) are kept as they
// are: they never become heirs.
func Drop(phases []sourcestest.Phase, skip []string) []sourcestest.Phase {
	dropped := map[string]sourcestest.Phase{}
	heir := map[string]string{}
	var out []sourcestest.Phase
	for _, p := range phases {
		if slices.Contains(skip, p.Name) {
			dropped[p.Name] = p
			continue
		}
		if p.State == "" {
			if h, ok := heir[p.SameSessionAs]; ok {
				p.SameSessionAs = h
			}
			out = append(out, p)
			continue
		}
		if h, ok := heir[p.SameSessionAs]; ok {
			p.SameSessionAs = h
		} else if _, ok := dropped[p.SameSessionAs]; ok {
			heir[p.SameSessionAs] = p.Name
			p.SameSessionAs = ""
		}
		for {
			d, ok := dropped[p.RelativeTo]
			if !ok {
				break
			}
			if _, taken := heir[d.Name]; !taken {
				heir[d.Name] = p.Name
			}
			p.RelativeTo, p.NewSession = d.RelativeTo, p.NewSession || d.NewSession
			if p.SameSessionAs == "" && d.SameSessionAs != "" {
				p.SameSessionAs = cmp.Or(heir[d.SameSessionAs], d.SameSessionAs)
			}
		}
		out = append(out, p)
	}
	return out
}

// CheckBySize is sourcestest.Replay.Check with each recording cut by
// SplitBySize: every recording of sc is replayed as a subtest and checked
// against sc's phases, except those named in skip (phases whose journal
// the recordings lack).
func CheckBySize(t *testing.T, r sourcestest.Replay, sc *sourcestest.Scenario, keep func(string) bool, skip []string) {
	t.Helper()
	sc.Phases = Drop(sc.Phases, skip)
	if len(sc.Recordings) == 0 {
		t.Skipf("%s has no recording", sc.Name)
	}
	for _, rec := range sc.Recordings {
		t.Run(rec.Name, func(t *testing.T) {
			r := r
			r.Split = SplitBySize(rec, keep)
			h := r.Run(t, rec)
			problems, notes := sourcestest.CheckPhases(sc.Phases, h.Transitions(), r.Checked)
			for _, n := range notes {
				t.Log(n)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}
