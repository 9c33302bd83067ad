package hub

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// FuzzRedactChanged checks that redacting only the changed fields gives
// the same snapshot as redacting all of them: prev is stored redacted, and
// the next snapshot keeps some of its fields and changes others.
func FuzzRedactChanged(f *testing.F) {
	f.Add("Fix the test", "password=hunter2 and more", "claude-opus", "sk-ant-api03-abcdefghijklmnop", uint8(0xff))
	f.Add(strings.Repeat("token=abcdefgh ", 20), "Bearer abcdefghijklmnopqrstuvwxyz", "m", "-----BEGIN RSA PRIVATE KEY-----\nabc", uint8(0x55))
	f.Add("ghp_abcdefghijklmnopqrstuvwxyz0123", "x", "AKIAABCDEFGHIJKLMNOP", "https://u:pw@host", uint8(0xaa))
	f.Fuzz(func(t *testing.T, a, b, c, d string, mask uint8) {
		raw := agentbridge.Snapshot{ID: "s", Harness: "h", Status: "running", Title: a, Model: c, WaitingFor: b,
			Subagents: []agentbridge.Subagent{{ID: "1", Type: c, Title: a, Status: "running"}, {ID: "2", Type: d, Title: b, Status: "running"}}}
		prev := raw
		prev.Subagents = append([]agentbridge.Subagent(nil), raw.Subagents...)
		validate.RedactSnapshot(&prev)

		// next starts from the stored (redacted) snapshot, as the fold's
		// copy does for fields no event touched, and takes raw text where
		// mask says an event changed it.
		next := prev
		next.Subagents = append([]agentbridge.Subagent(nil), prev.Subagents...)
		if mask&1 != 0 {
			next.Title = d + a
		}
		if mask&2 != 0 {
			next.Model = b
		}
		if mask&4 != 0 {
			next.WaitingFor = a
		}
		if mask&8 != 0 {
			next.Subagents[0].Title = d
		}
		if mask&16 != 0 {
			next.Subagents[1].Type = a
		}
		if mask&32 != 0 {
			next.Subagents = append(next.Subagents, agentbridge.Subagent{ID: "3", Type: b, Title: c, Status: "running"})
		}
		if mask&64 != 0 {
			next.Subagents = next.Subagents[1:]
		}
		if mask&128 != 0 { // a field that kept its raw, unredacted text
			next.Title = raw.Title
		}
		want := next
		want.Subagents = append([]agentbridge.Subagent(nil), next.Subagents...)
		validate.RedactSnapshot(&want)
		got := next
		got.Subagents = append([]agentbridge.Subagent(nil), next.Subagents...)
		redactChanged(&got, &prev)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("redactChanged:\n got %+v\nwant %+v", got, want)
		}
	})
}
