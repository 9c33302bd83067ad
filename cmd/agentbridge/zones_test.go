package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTimeZonesBuiltIn: the binary carries the IANA time zone database
// (time/tzdata), so GET /v1/usage?tz=Europe/Paris — which the dashboard's
// History view sends with the browser's zone on every load — and `usage
// --tz` work on a machine without one (Windows without Go installed, a
// minimal container): without it every such request is a 400 and the
// History view shows only an error. Go uses the embedded copy only when
// the system has no zone of that name.
func TestTimeZonesBuiltIn(t *testing.T) {
	const self = "github.com/agentbridge/agentbridge/cmd/agentbridge"
	out, err := exec.Command("go", "list", "-deps", self).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", self, err, msg)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != self {
		t.Fatalf("go list -deps %s listed %d packages, not ending with it", self, len(deps))
	}
	for _, d := range deps {
		if d == "time/tzdata" {
			return
		}
	}
	t.Errorf("%s does not import time/tzdata: time zones named by a client fail where the system has no zone database", self)
}
