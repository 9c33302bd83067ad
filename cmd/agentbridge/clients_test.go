package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
	"github.com/agentbridge/agentbridge/sources"
)

// realBridge runs the serve subcommand in-process with a push source, on an
// address named only by its config file, and returns the environment a
// client needs to find it (the same config and state directories: the
// client reads the listen address and the token file as a user's would).
func realBridge(t *testing.T) (env []string, addr, token string) {
	t.Helper()
	env = testEnv(t)
	home := envGet(env, "HOME")
	addr = bridgetest.FreeAddr(t)
	off := ""
	for _, r := range sources.Registered() { // only the push source: no agent's files
		off += "  " + r.Info.ID + ": {enabled: false}\n"
	}
	writeFile(t, filepath.Join(home, "config", "agentbridge", "config.yaml"), `listen: `+addr+`
sources:
`+off+`push:
  - id: test-push
    displayName: Test Push
    harnesses:
      - {id: example-agent, displayName: Example Agent}
      - {id: codex, displayName: Codex}
`, 0o600)
	dashboard, _, _ := startServe(t, env)
	token = dashboard.Query().Get("token")
	if token == "" {
		t.Fatal("no token in the dashboard URL")
	}
	return env, addr, token
}

// publish posts ops to the push source of a real bridge.
func publish(t *testing.T, addr, token string, ops ...any) {
	t.Helper()
	body, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/v1/sources/test-push/publish", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("publish: %d %s", resp.StatusCode, b)
	}
}

type obj = map[string]any

// worktrees builds a repository with a linked worktree, and a directory
// outside both, the way git lays them out.
func worktrees(t *testing.T) (repo, linked, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo, linked, outside = filepath.Join(base, "repo"), filepath.Join(base, "wt", "feature"), filepath.Join(base, "elsewhere")
	writeFile(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n", 0o600)
	writeFile(t, filepath.Join(repo, ".git", "worktrees", "feature", "commondir"), "../..\n", 0o600)
	writeFile(t, filepath.Join(linked, ".git"), "gitdir: "+filepath.Join(repo, ".git", "worktrees", "feature")+"\n", 0o600)
	for _, d := range []string{filepath.Join(repo, "src"), filepath.Join(linked, "src"), outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return repo, linked, outside
}

// sessionIDs runs the sessions subcommand with --json and returns the ids.
func sessionIDs(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := sessionsMain(t.Context(), append([]string{"--json"}, args...), env, &stdout, &stderr); err != nil {
		t.Fatalf("sessions %v: %v (stderr %q)", args, err, stderr.String())
	}
	var list sessionList
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil {
		t.Fatalf("sessions --json: %v\n%s", err, stdout.String())
	}
	if list.Revision == 0 {
		t.Error("sessions --json: no revision")
	}
	ids := []string{}
	for _, e := range list.Sessions {
		ids = append(ids, e.Snapshot.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestSessionsAgainstServe runs the sessions subcommand against the real
// server and checks each filter end to end.
func TestSessionsAgainstServe(t *testing.T) {
	env, addr, token := realBridge(t)
	repo, linked, outside := worktrees(t)
	self := os.Getpid()
	publish(t, addr, token, obj{"op": "reset", "sessions": []obj{
		{"id": "in-repo", "harness": "example-agent", "status": "running", "cwd": filepath.Join(repo, "src"), "title": "Fix tests"},
		{"id": "in-worktree", "harness": "codex", "status": "waiting", "cwd": filepath.Join(linked, "src")},
		{"id": "outside", "harness": "codex", "status": "idle", "lastTurn": "completed", "cwd": outside, "pid": self},
		{"id": "gone-pid", "harness": "example-agent", "status": "idle", "pid": 4194304},
	}})

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"all", nil, []string{"gone-pid", "in-repo", "in-worktree", "outside"}},
		{"project: below the root and in a linked worktree", []string{"--project", repo}, []string{"in-repo", "in-worktree"}},
		{"project from the linked worktree", []string{"--project", linked}, []string{"in-repo", "in-worktree"}},
		{"project subdirectory", []string{"--project", filepath.Join(linked, "src")}, []string{"in-repo", "in-worktree"}},
		{"project elsewhere", []string{"--project", outside}, []string{"outside"}},
		{"ancestor: itself", []string{"--ancestor-pid", strconv.Itoa(self)}, []string{"outside"}},
		{"ancestor: the test's parent", []string{"--ancestor-pid", strconv.Itoa(os.Getppid())}, []string{"outside"}},
		{"ancestor: no such process", []string{"--ancestor-pid", "4194303"}, []string{}},
		{"status", []string{"--status", "waiting,running"}, []string{"in-repo", "in-worktree"}},
		{"harness and project", []string{"--harness", "codex", "--project", repo}, []string{"in-worktree"}},
		{"source", []string{"--source", "test-push"}, []string{"gone-pid", "in-repo", "in-worktree", "outside"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, sessionIDs(t, env, tt.args...)); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("table", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if err := sessionsMain(t.Context(), []string{"--project", repo}, env, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID           HARNESS") ||
			!strings.HasPrefix(lines[1], "in-worktree  codex          waiting") || !strings.Contains(lines[2], "Fix tests") {
			t.Errorf("table:\n%s", stdout.String())
		}
	})
}

// TestWatchAgainstServe follows the real stream with a project filter: the
// first event is the filtered reset, a change inside the filter arrives as
// an upsert, a session that moves out of it is removed for this client, and
// --since resumes exactly after an event.
func TestWatchAgainstServe(t *testing.T) {
	env, addr, token := realBridge(t)
	repo, _, outside := worktrees(t)
	publish(t, addr, token, obj{"op": "reset", "sessions": []obj{
		{"id": "a", "harness": "example-agent", "status": "running", "cwd": repo},
		{"id": "b", "harness": "example-agent", "status": "running", "cwd": outside},
	}})

	next := startWatch(t, env, "--project", repo, "--limit", "3")
	var events []client.Event
	ev := next()
	events = append(events, ev)
	var reset struct {
		Source   string `json:"source"`
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(ev.Data, &reset); ev.Name != "reset" || err != nil || reset.Source != "test-push" ||
		len(reset.Sessions) != 1 || reset.Sessions[0].ID != "a" {
		t.Fatalf("first event %s %s, want the filtered reset with a only", ev.Name, ev.Data)
	}

	publish(t, addr, token, obj{"op": "upsert", "session": obj{"id": "a", "harness": "example-agent", "status": "idle", "lastTurn": "completed", "cwd": repo}})
	publish(t, addr, token, obj{"op": "upsert", "session": obj{"id": "b", "harness": "example-agent", "status": "idle", "cwd": outside}})
	publish(t, addr, token, obj{"op": "upsert", "session": obj{"id": "a", "harness": "example-agent", "status": "idle", "cwd": outside}})
	events = append(events, next(), next())
	if events[1].Name != "upsert" || !strings.Contains(string(events[1].Data), `"status":"idle","lastTurn":"completed"`) {
		t.Errorf("second event %s %s, want the upsert of a", events[1].Name, events[1].Data)
	}
	if events[2].Name != "remove" || !strings.Contains(string(events[2].Data), `"sessionId":"a"`) {
		t.Errorf("third event %s %s, want a removed as it left the project (b is never shown)", events[2].Name, events[2].Data)
	}
	if !(events[0].ID < events[1].ID && events[1].ID < events[2].ID) {
		t.Errorf("ids %d, %d, %d do not grow", events[0].ID, events[1].ID, events[2].ID)
	}

	// Resuming after the first event replays what followed it, in order.
	// A resumed client may also be told to remove b: the bridge cannot know
	// that this client never held it, and removing an unknown id is a no-op.
	next = startWatch(t, env, "--project", repo, "--since", strconv.FormatUint(events[0].ID, 10))
	if got := next(); !cmp.Equal(got, events[1]) {
		t.Fatalf("first event after --since: %+v, want %+v", got, events[1])
	}
	for {
		got := next()
		if cmp.Equal(got, events[2]) {
			break
		}
		if got.Name != "remove" || !strings.Contains(string(got.Data), `"sessionId":"b"`) || got.ID > events[2].ID {
			t.Fatalf("after --since: unexpected %+v before %+v", got, events[2])
		}
	}
}

// startWatch runs the watch subcommand until the test ends and returns a
// function that reads its next printed event.
func startWatch(t *testing.T, env []string, args ...string) func() client.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	stderr := &logBuffer{}
	go func() {
		err := watchMain(ctx, args, env, pw, stderr, fastBackoff)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		pr.Close()
		<-done
	})
	sc := bufio.NewScanner(pr)
	sc.Buffer(nil, client.MaxLine)
	return func() client.Event {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("watch %v ended early; stderr %q", args, stderr.String())
		}
		var ev client.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("watch printed %q: %v", sc.Text(), err)
		}
		return ev
	}
}
