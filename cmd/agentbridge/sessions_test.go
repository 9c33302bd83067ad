package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

var tableNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) int64 { return tableNow.Add(-d).UnixMilli() }

func TestWriteTable(t *testing.T) {
	entries := []sessionEntry{
		{"codex", agentbridge.Snapshot{ID: "c1", Harness: "codex", Status: "idle", LastTurn: "completed", Title: "Refactor the parser", Cwd: "/home/u/src/parser", LastTurnEndedAt: ago(5 * time.Minute)}, "", nil},
		{"claude-code", agentbridge.Snapshot{ID: "a1", Harness: "claude-code", Status: "running", Title: "Fix tests", Cwd: "/home/u"}, "", nil},
		{"claude-code", agentbridge.Snapshot{ID: "a2", Harness: "claude-code", Status: "waiting", WaitingFor: "Approve", Title: "Deploy\x1b[31m now", Cwd: "/srv/app", LastTurnEndedAt: ago(3 * 24 * time.Hour)}, "", nil},
		{"codex", agentbridge.Snapshot{ID: "c2", Harness: "codex", Status: "idle", LastTurn: "completed", Cwd: "/home/user2/x", LastTurnEndedAt: ago(30 * time.Second)}, "", nil},
		{"codex", agentbridge.Snapshot{ID: "c3", Harness: "codex", Status: "idle", LastTurn: "completed", Title: strings.Repeat("é", 70)}, "", &agentbridge.Ended{At: ago(time.Minute)}},
		{"codex", agentbridge.Snapshot{ID: "c4", Harness: "codex", Status: "idle", LastTurn: "failed", Error: "API Error: 529", LastTurnEndedAt: ago(time.Hour)}, "", nil},
		{"codex", agentbridge.Snapshot{ID: "c5", Harness: "codex", Status: "idle", LastTurn: "interrupted", LastTurnEndedAt: ago(2 * time.Hour)}, "", nil},
		{"codex", agentbridge.Snapshot{ID: "c6", Harness: "codex", Status: "idle"}, "", nil},
	}
	want := strings.Join([]string{
		"ID  HARNESS      STATUS       AGE  TITLE                                                         CWD",
		"a2  claude-code  waiting      3d   Deploy [31m now                                               /srv/app",
		"c4  codex        failed       1h   -                                                             -",
		"a1  claude-code  running      -    Fix tests                                                     ~",
		"c2  codex        done         30s  -                                                             /home/user2/x",
		"c1  codex        done         5m   Refactor the parser                                           ~/src/parser",
		"c5  codex        interrupted  2h   -                                                             -",
		"c6  codex        idle         -    -                                                             -",
		"c3  codex        exited       -    " + strings.Repeat("é", 59) + "…  -",
		"",
	}, "\n")
	var b bytes.Buffer
	if err := writeTable(&b, entries, tableStyle{now: tableNow, home: "/home/u"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Error("an escape sequence from a title reached the terminal")
	}
}

func TestWriteTableColor(t *testing.T) {
	entries := []sessionEntry{
		{"codex", agentbridge.Snapshot{ID: "w", Harness: "codex", Status: "waiting"}, "", nil},
		{"codex", agentbridge.Snapshot{ID: "r", Harness: "codex", Status: "running"}, "", nil},
	}
	var b bytes.Buffer
	if err := writeTable(&b, entries, tableStyle{now: tableNow, color: true}); err != nil {
		t.Fatal(err)
	}
	want := "ID  HARNESS  STATUS   AGE  TITLE  CWD\n" +
		"w   codex    \x1b[1;33mwaiting\x1b[0m  -    -      -\n" +
		"r   codex    \x1b[32mrunning\x1b[0m  -    -      -\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("coloured table (-want +got):\n%s", diff)
	}
}

func TestUseColor(t *testing.T) {
	tests := []struct {
		mode string
		env  []string
		want bool
	}{
		{"always", nil, true},
		{"never", nil, false},
		{"auto", nil, false}, // a buffer is not a terminal
		{"always", []string{"NO_COLOR=1"}, true},
	}
	for _, tt := range tests {
		got, err := useColor(tt.mode, &bytes.Buffer{}, tt.env)
		if err != nil || got != tt.want {
			t.Errorf("useColor(%q, %v) = %v, %v; want %v", tt.mode, tt.env, got, err, tt.want)
		}
	}
	if _, err := useColor("sometimes", &bytes.Buffer{}, nil); err == nil {
		t.Error("useColor(sometimes): want an error")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, _ := useColor("auto", f, nil); got {
		t.Error("a regular file was taken for a terminal")
	}
}

func TestAge(t *testing.T) {
	tests := []struct {
		ms   int64
		want string
	}{
		{0, ""},
		{ago(0), "0s"},
		{ago(59 * time.Second), "59s"},
		{ago(61 * time.Second), "1m"},
		{ago(90 * time.Minute), "1h"},
		{ago(47 * time.Hour), "47h"},
		{ago(49 * time.Hour), "2d"},
		{ago(-time.Hour), "0s"}, // clock skew: never negative
	}
	for _, tt := range tests {
		if got := age(tt.ms, tableNow); got != tt.want {
			t.Errorf("age(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

const listing = `{"revision":7,"sessions":[{"source":"codex","snapshot":{"id":"s1","harness":"codex","status":"running","title":"Fix tests","cwd":"/tmp/x"}}]}`

// TestSessionsFilters checks that every filter flag reaches the query as
// GET /v1/sessions names it.
func TestSessionsFilters(t *testing.T) {
	fb := newFakeBridge(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(listing))
	})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want url.Values
	}{
		{"none", nil, url.Values{}},
		{"source", []string{"--source", "codex,claude-code"}, url.Values{"source": {"codex,claude-code"}}},
		{"repeated harness", []string{"--harness", "codex", "--harness", "claude-code"}, url.Values{"harness": {"codex,claude-code"}}},
		{"status", []string{"--status=waiting,blocked"}, url.Values{"status": {"waiting,blocked"}}},
		{"project", []string{"--project", "/home/u/app"}, url.Values{"project": {"/home/u/app"}}},
		{"relative project", []string{"--project", "."}, url.Values{"project": {wd}}},
		{"ancestor pid", []string{"--ancestor-pid", "4242"}, url.Values{"ancestorPid": {"4242"}}},
		{"all", []string{"--source", "codex", "--harness", "codex", "--status", "done", "--project", "/p", "--ancestor-pid", "1"},
			url.Values{"source": {"codex"}, "harness": {"codex"}, "status": {"done"}, "project": {"/p"}, "ancestorPid": {"1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--addr", fb.addr()}, tt.args...)
			if err := sessionsMain(t.Context(), args, testEnv(t), &stdout, &stderr); err != nil {
				t.Fatalf("sessions: %v", err)
			}
			reqs := fb.requests()
			r := reqs[len(reqs)-1]
			if r.URL.Path != "/v1/sessions" {
				t.Errorf("path = %s, want /v1/sessions", r.URL.Path)
			}
			if diff := cmp.Diff(tt.want, r.URL.Query()); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSessionsOutput(t *testing.T) {
	fb := newFakeBridge(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("status") == "exited" {
			w.Write([]byte(`{"revision":7,"sessions":[]}`))
			return
		}
		w.Write([]byte(listing))
	})
	tests := []struct {
		name       string
		args       []string
		wantStdout string
		wantStderr string
	}{
		{"table", nil, "ID  HARNESS  STATUS   AGE  TITLE      CWD\ns1  codex    running  -    Fix tests  /tmp/x\n", ""},
		{"json", []string{"--json"}, `{
  "revision": 7,
  "sessions": [
    {
      "source": "codex",
      "snapshot": {
        "id": "s1",
        "harness": "codex",
        "status": "running",
        "title": "Fix tests",
        "cwd": "/tmp/x"
      }
    }
  ]
}
`, ""},
		{"empty", []string{"--status", "exited"}, "", "no sessions\n"},
		{"empty json", []string{"--status", "exited", "--json"}, "{\n  \"revision\": 7,\n  \"sessions\": []\n}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--addr", fb.addr()}, tt.args...)
			if err := sessionsMain(t.Context(), args, testEnv(t), &stdout, &stderr); err != nil {
				t.Fatalf("sessions: %v", err)
			}
			if diff := cmp.Diff(tt.wantStdout, stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if stderr.String() != tt.wantStderr {
				t.Errorf("stderr = %q, want %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestSessionsFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--ancestor-pid", "-3"}, "not a process id"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--color", "sometimes"}, "--color"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		err := sessionsMain(t.Context(), append(tt.args, "--addr", bridgetest.FreeAddr(t)), testEnv(t), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("sessions %v: err = %v, want %q", tt.args, err, tt.want)
		}
	}
	var stdout, stderr bytes.Buffer
	err := sessionsMain(t.Context(), []string{"--nope"}, testEnv(t), &stdout, &stderr)
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "unknown flag: --nope") {
		t.Errorf("unknown flag: err = %v, want a usage error naming it", err)
	}
}

// TestWriteTableIDs: the ID column shows each id by its shortest unique
// prefix of at least 8 characters; --wide shows ids and titles whole, with
// the source.
func TestWriteTableIDs(t *testing.T) {
	long := strings.Repeat("long title ", 10)
	entries := []sessionEntry{
		{"codex", agentbridge.Snapshot{ID: "019e5615-9632-7740-b2cf-3061e4ff06e2", Harness: "codex", Status: "running", Title: long}, "", nil},
		{"codex", agentbridge.Snapshot{ID: "019e5615-9f00-7000-8000-000000000000", Harness: "codex", Status: "running"}, "", nil},
		{"claude-code", agentbridge.Snapshot{ID: "8a525d27-2ad4-4f5e-a8b0-7a3b1d2c9e10", Harness: "claude-code", Status: "running"}, "", nil},
		{"example", agentbridge.Snapshot{ID: "short-id", Harness: "example-agent", Status: "running"}, "", nil},
	}
	var b bytes.Buffer
	if err := writeTable(&b, entries, tableStyle{now: tableNow}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n")[1:] {
		ids = append(ids, strings.Fields(l)[0])
	}
	want := []string{"8a525d27…", "019e5615-96…", "019e5615-9f…", "short-id"} // claude-code sorts first
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("short ids (-want +got):\n%s", diff)
	}

	b.Reset()
	if err := writeTable(&b, entries, tableStyle{now: tableNow, wide: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(lines[0], "SOURCE  ID  ") && !strings.HasPrefix(lines[0], "SOURCE       ID") {
		t.Errorf("wide header %q, want SOURCE then ID", lines[0])
	}
	for _, e := range entries {
		if !strings.Contains(b.String(), e.Snapshot.ID) {
			t.Errorf("wide table lacks the whole id %s:\n%s", e.Snapshot.ID, b.String())
		}
	}
	if !strings.Contains(b.String(), strings.TrimSpace(long)) {
		t.Errorf("wide table cut the title:\n%s", b.String())
	}
}

func TestWriteTableHostColumn(t *testing.T) {
	entries := []sessionEntry{
		{"codex", agentbridge.Snapshot{ID: "a", Harness: "codex", Status: "running"}, "devbox", nil},
		{"codex", agentbridge.Snapshot{ID: "a", Harness: "codex", Status: "running"}, "", nil},
	}
	var b bytes.Buffer
	if err := writeTable(&b, entries, tableStyle{now: tableNow, host: true, color: true}); err != nil {
		t.Fatal(err)
	}
	// The same id on two hosts is two rows; the local one has no host.
	want := "HOST    ID  HARNESS  STATUS   AGE  TITLE  CWD\n" +
		"-       a   codex    \x1b[32mrunning\x1b[0m  -    -      -\n" +
		"devbox  a   codex    \x1b[32mrunning\x1b[0m  -    -      -\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table with hosts (-want +got):\n%s", diff)
	}
}

// Text that reorders or hides itself, or drives the terminal, shows in the
// table as what it is: bidi controls and zero-width marks as U+FFFD,
// controls (C1 CSI included) as spaces; --json and watch keep the exact
// value with those characters escaped.
func TestTerminalTextIsNeutralised(t *testing.T) {
	title := "invoice\u202Etxt.exe \u2066x\u2069 id\u200B \u009B31mred\u001b[2J"
	entries := []sessionEntry{{"codex", agentbridge.Snapshot{ID: "s\u200B1", Harness: "codex", Status: "running", Title: title}, "", nil}}
	var b bytes.Buffer
	if err := writeTable(&b, entries, tableStyle{now: tableNow, wide: true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"\u202E", "\u2066", "\u2069", "\u200B", "\u009B", "\x1b"} {
		if strings.Contains(out, bad) {
			t.Errorf("the table prints %U raw:\n%q", []rune(bad)[0], out)
		}
	}
	if !strings.Contains(out, "invoice\uFFFDtxt.exe \uFFFDx\uFFFD id\uFFFD  31mred [2J") || !strings.Contains(out, "s\uFFFD1") {
		t.Errorf("table:\n%q", out)
	}

	var w bytes.Buffer
	bw := bufio.NewWriter(&w)
	data, _ := json.Marshal(map[string]any{"source": "codex", "snapshot": map[string]string{"title": title}})
	if err := printEvent(bw, client.Event{ID: 7, Name: "upsert", Data: data}); err != nil {
		t.Fatal(err)
	}
	line := w.String()
	if strings.ContainsAny(line, "\u202E\u2066\u200B\u009B") || !strings.Contains(line, `invoice\u202etxt.exe`) || !strings.Contains(line, `\u009b31mred`) {
		t.Fatalf("watch line %q", line)
	}
	var back struct {
		Data struct {
			Snapshot struct{ Title string } `json:"snapshot"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(line), &back); err != nil || back.Data.Snapshot.Title != title {
		t.Fatalf("the watch line does not decode to the exact title: %q %v", back.Data.Snapshot.Title, err)
	}
}
