package hub_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/hub"
)

// TestRevisionMarkForms: the revision mark file in the forms a hostile
// home could hold — values around 2^52, 2^53, 2^63 and 2^64, negative,
// non-numeric, with a BOM, other digits, separators, a NUL, two numbers —
// read through the real file store by three runs in a row: every run's
// ids are above the run before's and below 2^53, and a mark the runs do
// not believe starts the first at the ceiling.
func TestRevisionMarkForms(t *testing.T) {
	now := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	clock := uint64(now.UnixMicro())
	for _, tc := range []struct {
		text  string
		first uint64 // the first run's first revision; 0: above the clock
	}{
		{"4503599627370495", 1 << 52},              // 2^52−1: believed
		{"4503599627370496", 1<<52 + 1},            // 2^52
		{"4503599627370497", 1<<52 + 2},            // 2^52+1
		{"6755399441055744", hub.MaxStartRevision}, // MaxMark: not believed
		{"9007199254740991", hub.MaxStartRevision}, // 2^53−1
		{"9007199254740992", hub.MaxStartRevision}, // 2^53
		{"9223372036854775808", hub.MaxStartRevision},
		{"18446744073709551616", hub.MaxStartRevision},
		{"-1", hub.MaxStartRevision},
		{"-9223372036854775808", hub.MaxStartRevision},
		{"\ufeff42", hub.MaxStartRevision},
		{"\u0664\u0662", hub.MaxStartRevision}, // Arabic-Indic digits
		{"4_2", hub.MaxStartRevision},
		{"42\x00", hub.MaxStartRevision},
		{"42 43", hub.MaxStartRevision},
		{"1e15", hub.MaxStartRevision},
		{"NaN", hub.MaxStartRevision},
		{" 42\r\n", 0}, // a small mark: the clock is above it
		{"0", 0},
	} {
		t.Run(strconv.Quote(tc.text), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "revision")
			if err := os.WriteFile(p, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			prev := uint64(0)
			for run := range 3 {
				h := hub.New(hub.Options{Revisions: config.RevisionFile(p), RevisionBlock: 10, Logger: slog.New(slog.DiscardHandler),
					Now: func() time.Time { return now }})
				if err := h.AddPush(agentbridge.SourceInfo{ID: "p", Harnesses: []agentbridge.Harness{{ID: "a", DisplayName: "A"}}}); err != nil {
					t.Fatal(err)
				}
				first := h.Revision()
				switch {
				case run == 0 && tc.first != 0 && first != tc.first:
					t.Fatalf("first revision %d; want %d", first, tc.first)
				case run == 0 && tc.first == 0 && first < clock:
					t.Fatalf("first revision %d below the clock %d", first, clock)
				case first <= prev:
					t.Fatalf("run %d starts at %d, not above the last run's %d", run, first, prev)
				}
				for i := range 25 {
					err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: agentbridge.Snapshot{ID: "s" + strconv.Itoa(i), Harness: "a", Status: agentbridge.StatusIdle}}})
					if err != nil {
						t.Fatal(err)
					}
				}
				prev = h.Revision()
				if prev >= 1<<53 {
					t.Fatalf("revision %d reached 2^53", prev)
				}
			}
		})
	}
}
