package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the client light: a program that only talks to a
// bridge builds package client with the root package's wire vocabulary and
// the standard library, never the server (hub, config) nor what the server
// pulls in (Prometheus, koanf).
func TestDependencies(t *testing.T) {
	const self = "github.com/agentbridge/agentbridge/client"
	allowed := map[string]bool{self: true, "github.com/agentbridge/agentbridge": true}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", self).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", self, err, msg)
	}
	var all, outside []string
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		path, std, _ := strings.Cut(strings.TrimSpace(line), " ")
		all = append(all, path)
		if std != "true" && !allowed[path] {
			outside = append(outside, path)
		}
	}
	if len(all) == 0 || !allowed[all[len(all)-1]] {
		t.Fatalf("go list -deps %s listed %d packages, not ending with the client: %q", self, len(all), out)
	}
	if len(outside) > 0 {
		t.Errorf("package client depends on %d packages beyond the root package and the standard library (of %d in all): %s",
			len(outside), len(all), strings.Join(outside, ", "))
	}
}
