package api

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// vmKB reads a "Vm…:" line of /proc/self/status in KiB.
func vmKB(t testing.TB, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Skipf("no %s in /proc/self/status", field)
	return 0
}

// resetPeak resets VmHWM, the peak resident set, to the current one
// (Linux 4.0+); false when that is not possible.
func resetPeak() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// hostileBodies are 1 MB JSON arrays whose every element is wrong, each
// in its own way: the attack that made a 41 MB issue list.
func hostileBodies() map[string]string {
	many := func(elem string) string {
		n := (1<<20 - 2) / (len(elem) + 1)
		return "[" + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + "]"
	}
	return map[string]string{
		"numbers":        many("1"),
		"empty objects":  many("{}"),
		"unknown fields": many(`{"op":"upsert","session":{"id":"s","harness":"example-agent","status":"idle","x":1,"y":2}}`),
		"long keys":      many(`{"` + strings.Repeat("k", 100<<10) + `":1,"op":"remove","sessionId":"s"}`),
	}
}

// TestHostileIssueListsAreBounded: whatever the body, an answer carries at
// most 100 issues and the count of the rest, stays a few hundred
// KiB, and the bridge's resident set does not balloon (it reached 848 MB).
// Not parallel: it measures the process's peak resident set.
func TestHostileIssueListsAreBounded(t *testing.T) {
	h := hub.New(hub.Options{})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "example-push", DisplayName: "Example Agent", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "example-agent", DisplayName: "Example Agent"}}}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(s *Server) { s.Hub = h })
	for name, body := range hostileBodies() {
		for _, path := range []string{"/v1/sources/example-push/publish", "/v1/validate/reset", "/v1/validate/snapshot", "/v1/validate/event"} {
			t.Run(name+" "+path, func(t *testing.T) {
				base := vmKB(t, "VmRSS")
				peak := resetPeak()
				resp, out := f.do(t, req{method: "POST", path: path, body: body})
				if resp.StatusCode != 200 && resp.StatusCode != 422 && resp.StatusCode != 400 {
					t.Fatalf("status %d: %.300s", resp.StatusCode, out)
				}
				if len(out) > 256<<10 {
					t.Errorf("the answer is %d KiB, want at most 256", len(out)>>10)
				}
				if n := strings.Count(string(out), `"path":`); n > 100 {
					t.Errorf("the answer lists %d issues, want at most %d", n, 100)
				}
				if resp.StatusCode != 400 && !strings.Contains(string(out), `"issuesOmitted":`) && strings.Count(string(out), `"path":`) == 100 {
					t.Errorf("a capped list does not say how many issues were left out: %.300s", out)
				}
				if peak {
					grew := vmKB(t, "VmHWM") - base
					t.Logf("answer %d KiB, resident set peak +%d MiB", len(out)>>10, grew>>10)
					limit := int64(64 << 10)
					if raceEnabled {
						limit *= 4
					}
					if grew > limit {
						t.Errorf("the resident set peaked %d MiB above where it was, want under %d MiB", grew>>10, limit>>10)
					}
				}
			})
		}
	}
}
