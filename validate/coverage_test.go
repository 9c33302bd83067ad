package validate

import (
	"slices"
	"testing"
)

// TestEveryCodeIsTested checks that the tables of this package hold, for
// every entry point, at least one case for every code it can produce
// (Session.Apply's are package fold's TestEveryCodeIsTested).
func TestEveryCodeIsTested(t *testing.T) {
	t.Parallel()
	all := func(except ...Code) []Code {
		var out []Code
		for _, c := range Codes {
			if !slices.Contains(except, c) {
				out = append(out, c)
			}
		}
		return out
	}
	seen := map[string]map[Code]bool{}
	note := func(entry string, want []pc) {
		if seen[entry] == nil {
			seen[entry] = map[Code]bool{}
		}
		for _, w := range want {
			seen[entry][w.Code] = true
		}
	}
	for _, c := range snapshotCases {
		note("Snapshot", c.want)
	}
	for _, c := range resetCases {
		note("Reset", c.want)
	}
	for _, c := range diagnosticCases {
		note("Diagnostic", c.want)
	}
	for _, c := range eventCases {
		note("Event", c.want)
	}
	for _, c := range decodeSnapshotCases {
		note("DecodeSnapshot", c.want)
	}
	for _, c := range decodeResetCases {
		note("DecodeReset", c.want)
	}
	for _, c := range decodeDiagnosticCases {
		note("DecodeDiagnostic", c.want)
	}
	for _, c := range decodeEventCases {
		note("DecodeEvent", c.want)
	}

	// What each entry point can produce. Typed checks never see JSON, so
	// they report no invalid_type, and a typed snapshot has no unknown
	// field; events and diagnostics have no arrays and no harness. A
	// snapshot's or diagnostic's missing field has the host's code for the
	// field, never missing_field (a reset's stream form without "sessions"
	// is the one missing_field of DecodeReset).
	want := map[string][]Code{
		"Snapshot":         all(InvalidType, UnknownField, MissingField),
		"Reset":            all(InvalidType, UnknownField, MissingField),
		"Diagnostic":       {InvalidString, InvalidID},
		"Event":            all(InvalidType, InvalidArray, Duplicate, HarnessNotEnabled),
		"DecodeSnapshot":   all(MissingField),
		"DecodeReset":      all(MissingField),
		"DecodeDiagnostic": {InvalidType, InvalidString, InvalidID, UnknownField, Duplicate},
		"DecodeEvent":      all(InvalidArray, HarnessNotEnabled),
	}
	for entry, codes := range want {
		for _, c := range codes {
			if !seen[entry][c] {
				t.Errorf("no test case expects %s from %s", c, entry)
			}
		}
	}
}
