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
	title, model, waiting := snap.Title != prev.Title, snap.Model != prev.Model, snap.WaitingFor != prev.WaitingFor
	if title {
		t.Title = snap.Title
	}
	if model {
		t.Model = snap.Model
	}
	if waiting {
		t.WaitingFor = snap.WaitingFor
	}
	tool, errText := snap.Tool != prev.Tool, snap.Error != prev.Error
	if tool {
		t.Tool = snap.Tool
	}
	if errText {
		t.Error = snap.Error
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
	if !title && !model && !waiting && !tool && !errText && len(changed) == 0 {
		return
	}
	validate.RedactSnapshot(&t)
	if title {
		snap.Title = t.Title
	}
	if model {
		snap.Model = t.Model
	}
	if waiting {
		snap.WaitingFor = t.WaitingFor
	}
	if tool {
		snap.Tool = t.Tool
	}
	if errText {
		snap.Error = t.Error
	}
	for j, i := range changed {
		snap.Subagents[i].Type, snap.Subagents[i].Title = t.Subagents[j].Type, t.Subagents[j].Title
	}
}
