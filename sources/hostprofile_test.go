package sources_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// TestGoldenSnapshotsPassTheHostProfile: every snapshot a source's golden
// replay ends with (sources/*/testdata/golden: the *.snapshot.json files,
// and the "snapshot" or "snapshots" of the other golden files) is one the
// Terminay host accepts once a pid and a cwd are given, as a live session
// bound to its process has them. The replays carry no process, so a
// missing pid or cwd is filled in; nothing else is changed.
func TestGoldenSnapshotsPassTheHostProfile(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("*", "testdata", "golden", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var snaps []json.RawMessage
		switch {
		case strings.HasSuffix(f, ".snapshot.json") && strings.HasPrefix(strings.TrimSpace(string(data)), "["):
			if err := json.Unmarshal(data, &snaps); err != nil { // a journal of many sessions
				t.Fatalf("%s: %v", f, err)
			}
		case strings.HasSuffix(f, ".snapshot.json"):
			snaps = []json.RawMessage{data}
		default:
			var g struct {
				Snapshot  json.RawMessage   `json:"snapshot"`
				Snapshots []json.RawMessage `json:"snapshots"`
			}
			if err := json.Unmarshal(data, &g); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			snaps = g.Snapshots
			if len(g.Snapshot) > 0 && string(g.Snapshot) != "null" {
				snaps = append(snaps, g.Snapshot)
			}
		}
		for _, raw := range snaps {
			var s agentbridge.Snapshot
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if s.PID == 0 {
				s.PID = 4242
			}
			if s.Cwd == "" {
				s.Cwd = "/home/user/project"
			}
			// Through JSON, as the extension hands it to the host.
			withProcess, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if _, is := validate.DecodeSnapshotAs(withProcess, validate.Harnesses{s.Harness: true}, validate.Host); len(is) > 0 {
				t.Errorf("%s: the host refuses %s: %v", f, withProcess, is)
			}
			n++
		}
	}
	if len(files) < 100 || n < len(files) {
		t.Errorf("checked %d snapshots in %d golden files; every golden file holds at least one", n, len(files))
	}
}
