package qwen

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

// realRecord is the registry record Qwen Code 0.24.4's own writer wrote
// (testdata/SOURCES.md), as a map so that a test can make it name a live
// process.
func realRecord(t *testing.T) map[string]jsontext.Value {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "registry", "1273.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]jsontext.Value
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// recordFor returns the real record made to name pid, whose start time
// is ticks (procStart as Qwen Code writes it: "<boot id>:<ticks>").
func recordFor(t *testing.T, pid int, ticks uint64) []byte {
	t.Helper()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skipf("no boot id: %v", err) // not Linux
	}
	m := realRecord(t)
	m["pid"] = jsontext.Value(strconv.Itoa(pid))
	m["procStart"] = jsontext.Value(strconv.Quote(string(bytes.TrimSpace(boot)) + ":" + strconv.FormatUint(ticks, 10)))
	b, err := json.Marshal(m, jsontext.Multiline(true))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRegistryBindsTheProcess: a session whose chat has no runtime file is
// bound to the process the live registry names (sessions/<pid>.json), whose
// end makes it exited, and the registry's qwenVersion is a version seen; a
// stale record (the pid's start time is not the record's) binds nothing.
func TestRegistryBindsTheProcess(t *testing.T) {
	home := t.TempDir()
	const id = "3f0c2a4e-1b7d-4c55-9a8e-2d6f1e9b7c10" // the real record's session
	chats := filepath.Join(home, "projects", "-tmp-qwenreg-w", "chats")
	agent, _ := startAgent(t, "sleep", "60")
	st, err := proc.ReadStat(proc.Root, agent.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stale, _ := startAgent(t, "sleep", "60")
	stSt, err := proc.ReadStat(proc.Root, stale.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	const staleID = "4a0c2a4e-1b7d-4c55-9a8e-2d6f1e9b7c10"

	var clock sourcestest.Clock
	h := sourcestest.RunReal(t, New(sources.Options{Home: home}), &clock, hub.Options{Tested: map[string]agentbridge.VersionRange{}})
	reg := filepath.Join(home, "sessions")
	sourcestest.Append(t, filepath.Join(reg, strconv.Itoa(agent.Process.Pid)+".json"), string(recordFor(t, agent.Process.Pid, st.StartTime)))
	staleRec := strings.Replace(string(recordFor(t, stale.Process.Pid, stSt.StartTime+1)), id, staleID, 1)
	sourcestest.Append(t, filepath.Join(reg, strconv.Itoa(stale.Process.Pid)+".json"), staleRec)
	for _, sid := range []string{id, staleID} {
		sourcestest.Append(t, filepath.Join(chats, sid+".jsonl"), `{"uuid":"u1","parentUuid":null,"sessionId":"`+sid+`","timestamp":"`+time.Now().UTC().Format(time.RFC3339Nano)+`","type":"user","cwd":"/tmp/qwenreg/w","version":"0.24.4","message":{"role":"user","parts":[{"text":"hi"}]}}`+"\n")
	}
	h.WaitFor(t, "the registry's process bound", func(*hub.Hub) bool { e, _ := h.Entry(id); return e.Snapshot.PID == agent.Process.Pid })
	h.WaitFor(t, "the stale session", func(*hub.Hub) bool { _, ok := h.Entry(staleID); return ok })
	if e, _ := h.Entry(staleID); e.Snapshot.PID != 0 {
		t.Errorf("a stale registry record bound pid %d", e.Snapshot.PID)
	}
	src, _ := h.Source(ID)
	if hs := src.Harnesses[0]; len(hs.VersionsSeen) != 1 || hs.VersionsSeen[0] != "0.24.4" {
		t.Errorf("versions seen %v, want the registry's 0.24.4", hs.VersionsSeen)
	}
	agent.Process.Kill()
	h.WaitFor(t, "exited", func(*hub.Hub) bool { e, _ := h.Entry(id); return e.Ended != nil })
}

func TestParseRegistry(t *testing.T) {
	real, err := os.ReadFile(filepath.Join("testdata", "registry", "1273.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file, data string
		ok               bool
	}{
		{"the real record", "1273.json", string(real), true},
		{"a hosted session's own slot", "1273-0a1b2c3d.json", string(real), true},
		{"a pid that is not the file's", "1274.json", string(real), false},
		{"another schema", "1273.json", strings.Replace(string(real), `"schemaVersion": 1`, `"schemaVersion": 2`, 1), false},
		{"no session id", "1273.json", strings.Replace(string(real), `"sessionId"`, `"sessionID"`, 1), false},
		{"a session id that is not an id", "1273.json", strings.Replace(string(real), `3f0c2a4e-1b7d-4c55-9a8e-2d6f1e9b7c10`, `../../x y`, 1), false},
		{"not JSON", "1273.json", "{", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseRegistry(tt.file, []byte(tt.data))
			if (err == nil) != tt.ok {
				t.Errorf("parseRegistry = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// FuzzParseRegistry: any registry file parses to a record naming its own
// pid and a valid session, or to an error, never a panic. Seed: the real
// record in testdata/registry.
func FuzzParseRegistry(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "registry", "1273.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("1273.json", b)
	f.Add("1273-0a1b2c3d.json", b)
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		r, err := parseRegistry(name, data)
		if err == nil && (r.PID <= 0 || !validate.ValidID(r.SessionID)) {
			t.Fatalf("parseRegistry accepted %+v", r)
		}
	})
}
