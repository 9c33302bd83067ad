package live

import (
	"testing"

	"golang.org/x/mod/semver"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
)

// pins are the pinned CLIs, taken before make live-latest replaces them
// (useLatest).
var pins = pinned()

// pinned lists every CLI the suite installs.
func pinned() []agentCLI {
	all := append([]agentCLI{}, claudeCLIs...)
	all = append(all, codexCLIs...)
	return append(all, copilotCLI, geminiCLI, qwenCLI, opencodeCLI, piCLI)
}

// TestTestedRangesMatchPins keeps sources.Tested (the tested range GET
// /v1/sources shows per harness) in step with the versions this suite
// pins: the range of each harness is its oldest and newest pin, and no
// harness claims a range the suite does not run. It runs without
// AGENTBRIDGE_LIVE: it installs nothing.
func TestTestedRangesMatchPins(t *testing.T) {
	want := map[string]agentbridge.VersionRange{}
	for _, c := range pins {
		v := "v" + c.Version
		if !semver.IsValid(v) {
			t.Fatalf("%s: pin %q is not a version", c.Agent, c.Version)
		}
		r, ok := want[c.Agent]
		if !ok {
			r = agentbridge.VersionRange{Min: c.Version, Max: c.Version}
		}
		if semver.Compare(v, "v"+r.Min) < 0 {
			r.Min = c.Version
		}
		if semver.Compare(v, "v"+r.Max) > 0 {
			r.Max = c.Version
		}
		want[c.Agent] = r
	}
	for h, r := range want {
		if got, ok := sources.Tested[h]; !ok || got != r {
			t.Errorf("sources.Tested[%q] = %+v, want %+v (the pins of e2e/live)", h, got, r)
		}
	}
	for h := range sources.Tested {
		if _, ok := want[h]; !ok {
			t.Errorf("sources.Tested[%q] is declared but the live suite pins no %s CLI", h, h)
		}
	}
}
