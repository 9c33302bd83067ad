package claudecode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

// jobFixture reads a state.json Claude Code 2.1.332 wrote for a background
// session (testdata/SOURCES.md).
func jobFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "jobs", name+".state.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBackgroundJobBlocked: a background session (claude --bg) whose
// daemon state says tempo "blocked" is blocked, waiting for what it needs,
// while its turn is open (the registry says only "idle" then); stopping
// it (tempo "idle") ends the wait.
func TestBackgroundJobBlocked(t *testing.T) {
	home := t.TempDir()
	const id = "98c1f4b8-509b-465c-b8fe-59a36095740d"
	transcript, err := os.ReadFile(filepath.Join("testdata", "jobs", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, "jobs", "98c1f4b8", "state.json")
	sourcestest.Append(t, state, jobFixture(t, "starting"))
	h := sourcestest.Start(t, New(Options{Home: home}), nil)
	sourcestest.Append(t, filepath.Join(home, "projects", "-tmp-cjob-w", id+".jsonl"), string(transcript))
	h.WaitFor(t, "the turn", func(h *sourcestest.Hub) bool {
		s, _ := h.Snapshot(id)
		return s.Status == agentbridge.StatusRunning
	})

	kittest.Replace(t, state, jobFixture(t, "blocked"))
	h.WaitFor(t, "blocked", func(h *sourcestest.Hub) bool {
		s, _ := h.Snapshot(id)
		return s.Status == agentbridge.StatusBlocked && s.WaitingFor == "login required — run /login"
	})

	kittest.Replace(t, state, jobFixture(t, "stopped"))
	h.WaitFor(t, "no longer blocked", func(h *sourcestest.Hub) bool {
		s, _ := h.Snapshot(id)
		return s.Status == agentbridge.StatusRunning && s.WaitingFor == ""
	})
}

func TestParseJob(t *testing.T) {
	tests := []struct {
		name, short, data string
		want              Job
		ok                bool
	}{
		{"starting", "98c1f4b8", jobFixture(t, "starting"), Job{Short: "98c1f4b8", SessionID: "98c1f4b8-509b-465c-b8fe-59a36095740d", Tempo: "active", UpdatedAt: 1796400675021}, true},
		{"blocked", "98c1f4b8", jobFixture(t, "blocked"), Job{Short: "98c1f4b8", SessionID: "98c1f4b8-509b-465c-b8fe-59a36095740d", Tempo: "blocked", Needs: "login required — run /login", UpdatedAt: 1796400685369}, true},
		{"half-written", "98c1f4b8", `{"state":"work`, Job{}, false},
		{"no session", "98c1f4b8", `{"tempo":"blocked"}`, Job{}, false},
		{"a directory that is no id", "../x", jobFixture(t, "blocked"), Job{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJob(tt.short, []byte(tt.data))
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ParseJob = %+v, %v; want %+v (ok %v)", got, err, tt.want, tt.ok)
			}
		})
	}
}

// FuzzParseJob: any state file parses to a job with a valid session id or
// to an error, never a panic. Seeds: the real files in testdata/jobs.
func FuzzParseJob(f *testing.F) {
	for _, name := range []string{"starting", "blocked", "stopped"} {
		b, err := os.ReadFile(filepath.Join("testdata", "jobs", name+".state.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add("98c1f4b8", b)
	}
	f.Add("x", []byte(`{"sessionId":"a","state":"blocked"}`))
	f.Fuzz(func(t *testing.T, short string, data []byte) {
		j, err := ParseJob(short, data)
		if err == nil && (!validate.ValidID(j.SessionID) || !validate.ValidID(j.Short)) {
			t.Fatalf("ParseJob accepted %+v", j)
		}
	})
}
