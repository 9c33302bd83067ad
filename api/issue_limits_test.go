package api

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/validate"
)

// vmKB reads a "Vm…:" line of /proc/self/status in KiB.
func vmKB(t testing.TB, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		testenv.Missing(t, "no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	testenv.Missing(t, "no %s in /proc/self/status", field)
	return 0
}

// resetPeak resets VmHWM, the peak resident set, to the current one
// (Linux 4.0+); false when that is not possible.
func resetPeak() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// wrongBody is a 1 MB body whose every part is wrong, each in its own
// way: the attack that made a 41 MB issue list. wrong is how many wrong
// parts it has.
type wrongBody struct {
	body  string
	wrong int
}

// wrongBodies are 1 MB bodies for path: JSON arrays of wrong operations
// or snapshots for the endpoints that take arrays, single objects with
// thousands of wrong fields for those that take one snapshot or event.
func wrongBodies(path string) map[string]wrongBody {
	many := func(elem string) wrongBody {
		n := (1<<20 - 2) / (len(elem) + 1)
		return wrongBody{"[" + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + "]", n}
	}
	fields := func(head, field string) wrongBody {
		var b strings.Builder
		b.WriteString("{" + head)
		n := 0
		for {
			f := fmt.Sprintf(`,"%s%d":1`, field, n)
			if b.Len()+len(f)+1 > 1<<20-1024 {
				break
			}
			b.WriteString(f)
			n++
		}
		b.WriteString("}")
		return wrongBody{b.String(), n}
	}
	if strings.HasSuffix(path, "/snapshot") || strings.HasSuffix(path, "/event") {
		head := `"id":"s","harness":"example-agent","status":"idle"`
		if strings.HasSuffix(path, "/event") {
			head = `"kind":"turn.started"`
		}
		return map[string]wrongBody{
			"unknown fields": fields(head, "x"),
			"long keys":      fields(head, strings.Repeat("k", 100<<10)),
		}
	}
	bodies := map[string]wrongBody{
		"numbers":        many("1"),
		"empty objects":  many("{}"),
		"unknown fields": many(`{"op":"upsert","session":{"id":"s","harness":"example-agent","status":"idle","x":1,"y":2}}`),
		"long keys":      many(`{"` + strings.Repeat("k", 100<<10) + `":1,"op":"remove","sessionId":"s"}`),
	}
	if strings.HasSuffix(path, "/reset") {
		// A reset is checked up to its bound of sessions (the rest is one
		// issue of its own).
		for k, b := range bodies {
			b.wrong = min(b.wrong, validate.MaxResetSessions)
			bodies[k] = b
		}
	}
	return bodies
}

// TestIssueListsAreBounded: whatever the body, an answer lists
// every wrong part up to 100 issues and then the count of the rest, stays
// a few hundred KiB, and the bridge's resident set does not balloon (it
// reached 848 MB). Not parallel: it measures the process's peak resident
// set.
func TestIssueListsAreBounded(t *testing.T) {
	h := hub.New(hub.Options{})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "example-push", DisplayName: "Example Agent", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "example-agent", DisplayName: "Example Agent"}}}); err != nil {
		t.Fatal(err)
	}
	if !resetPeak() {
		testenv.Missing(t, "cannot reset the peak resident set (/proc/self/clear_refs)")
	}
	f := newFixture(t, func(s *Server) { s.Hub = h })
	for _, path := range []string{"/v1/sources/example-push/publish", "/v1/validate/reset", "/v1/validate/snapshot", "/v1/validate/event"} {
		for name, hb := range wrongBodies(path) {
			t.Run(name+" "+path, func(t *testing.T) {
				base := vmKB(t, "VmRSS")
				resetPeak()
				resp, out := f.do(t, req{method: "POST", path: path, body: hb.body})
				if resp.StatusCode != 200 && resp.StatusCode != 422 {
					t.Fatalf("status %d, want 200 (validate) or 422 (publish): %.300s", resp.StatusCode, out)
				}
				if len(out) > 256<<10 {
					t.Errorf("the answer is %d KiB, want at most 256", len(out)>>10)
				}
				var ans struct {
					Issues        []json.RawMessage `json:"issues"`
					IssuesOmitted int               `json:"issuesOmitted"`
				}
				if err := json.Unmarshal(out, &ans); err != nil {
					t.Fatalf("the answer is no JSON: %v: %.300s", err, out)
				}
				// Every wrong part makes at least one issue: a body with more
				// than 100 lists exactly 100 and counts the rest.
				if listed := len(ans.Issues); listed > 100 || listed < min(hb.wrong, 100) {
					t.Errorf("the answer lists %d issues for %d wrong parts, want min(%d, 100)", listed, hb.wrong, hb.wrong)
				}
				if hb.wrong > 100 && ans.IssuesOmitted < hb.wrong-100 {
					t.Errorf("%d wrong parts, %d listed: the answer counts %d left out, want at least %d",
						hb.wrong, len(ans.Issues), ans.IssuesOmitted, hb.wrong-100)
				}
				grew := vmKB(t, "VmHWM") - base
				t.Logf("answer %d KiB, %d issues + %d omitted, resident set peak +%d MiB", len(out)>>10, len(ans.Issues), ans.IssuesOmitted, grew>>10)
				limit := int64(64 << 10)
				if raceEnabled {
					limit *= 4
				}
				if grew > limit {
					t.Errorf("the resident set peaked %d MiB above where it was, want under %d MiB", grew>>10, limit>>10)
				}
			})
		}
	}
}
