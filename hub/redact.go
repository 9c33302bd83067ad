package hub

import (
	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// redactChanged redacts the display text of snap (a fresh copy the fold
// just made) as validate.RedactSnapshot does, scanning only the fields
// that differ from prev, the session's previous snapshot, which is already
// redacted: redaction is idempotent (FuzzRedactChanged checks that the
// result is the same), and a busy session's text rarely changes while its
// events stream in. prev nil redacts everything.
func redactChanged(snap, prev *agentbridge.Snapshot) {
	if prev == nil {
		validate.RedactSnapshot(snap)
		return
	}
	var t agentbridge.Snapshot
	cur, old, tmp := displayTexts(snap), displayTexts(prev), displayTexts(&t)
	var differs [len(cur)]bool
	anyText := false
	for i := range cur {
		if *cur[i] != *old[i] {
			differs[i], anyText = true, true
			*tmp[i] = *cur[i]
		}
	}
	var changed []int
	for i := range snap.Subagents {
		s := &snap.Subagents[i]
		if i < len(prev.Subagents) && prev.Subagents[i].Type == s.Type && prev.Subagents[i].Title == s.Title {
			continue
		}
		changed = append(changed, i)
		t.Subagents = append(t.Subagents, agentbridge.Subagent{Type: s.Type, Title: s.Title})
	}
	if !anyText && len(changed) == 0 {
		return
	}
	validate.RedactSnapshot(&t)
	for i := range cur {
		if differs[i] {
			*cur[i] = *tmp[i]
		}
	}
	for j, i := range changed {
		snap.Subagents[i].Type, snap.Subagents[i].Title = t.Subagents[j].Type, t.Subagents[j].Title
	}
}

// displayTexts returns the display texts of s that validate.RedactSnapshot
// redacts, besides the subagents': title, model, waitingFor, tool, error.
func displayTexts(s *agentbridge.Snapshot) [5]*string {
	return [5]*string{&s.Title, &s.Model, &s.WaitingFor, &s.Tool, &s.Error}
}
