package kittest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

func TestDrop(t *testing.T) {
	ph := func(name, state, rel, same string, isNew bool) sourcestest.Phase {
		return sourcestest.Phase{Name: name, State: state, RelativeTo: rel, SameSessionAs: same, NewSession: isNew}
	}
	tests := []struct {
		name string
		in   []sourcestest.Phase
		skip []string
		want []sourcestest.Phase
	}{
		{"nothing to drop", []sourcestest.Phase{ph("a", "ready", "start", "", false)}, nil,
			[]sourcestest.Phase{ph("a", "ready", "start", "", false)}},
		{"the first phase naming a dropped birth takes its place; later ones name it", []sourcestest.Phase{
			ph("birth", "ready", "pre", "", true),
			ph("pid", "", "birth", "birth", false),
			ph("start", "working", "birth", "birth", false),
			ph("end", "ready", "start", "birth", false),
		}, []string{"birth"}, []sourcestest.Phase{
			ph("pid", "", "birth", "birth", false),
			ph("start", "working", "pre", "", true),
			ph("end", "ready", "start", "start", false),
		}},
		{"chains of dropped phases", []sourcestest.Phase{
			ph("s1", "ready", "start", "", false),
			ph("s1t", "working", "s1", "s1", false),
			ph("s2pre", "ready", "s1t", "", true),
			ph("s2", "ready", "s2pre", "", true),
			ph("s2t", "working", "s2", "s2", false),
			ph("s1t2", "working", "s2t", "s1", false),
		}, []string{"s1", "s2pre", "s2"}, []sourcestest.Phase{
			ph("s1t", "working", "start", "", false),
			ph("s2t", "working", "s1t", "", true),
			ph("s1t2", "working", "s2t", "s1t", false),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Drop(tt.in, tt.skip)); diff != "" {
				t.Errorf("Drop (-want +got):\n%s", diff)
			}
		})
	}
}
