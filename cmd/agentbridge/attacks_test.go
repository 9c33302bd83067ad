package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/internal/testenv"
)

// exampleJournal is a short live session of the example agent in cwd.
func exampleJournal(title, cwd string) string {
	ts := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	return fmt.Sprintf(`{"type":"session","ts":%q,"title":%q,"model":"example-large-2","cwd":%q}`+"\n"+
		`{"type":"prompt","ts":%q,"turnId":"turn-1","text":"go on"}`+"\n", ts, title, cwd, ts)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sparseFile(t *testing.T, p string, size int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
	must(t, err)
	must(t, f.Truncate(size))
	f.Close()
}

// attackedHome puts, under home, every attack on the files the bridge reads
// that an agent running as the user could mount, and returns the example
// agent's home and the directory of a repository (a session in another
// directory, whose .git is a FIFO, is not of it).
func attackedHome(t *testing.T, home string) (exHome, repo string) {
	t.Helper()
	exHome = filepath.Join(home, "example")
	sessions := filepath.Join(exHome, "sessions")
	must(t, os.MkdirAll(sessions, 0o700))
	// 24 journals each ending in an 8 MiB line without end.
	frag := strings.Repeat("x", 8<<20-64)
	for i := range 24 {
		must(t, os.WriteFile(filepath.Join(sessions, fmt.Sprintf("frag-%02d.jsonl", i)), []byte(exampleJournal("frag", "/work/frag")+frag), 0o600))
	}
	// A 16 GiB sparse journal, a FIFO journal, a journal linked to /dev/zero.
	sparseFile(t, filepath.Join(sessions, "sparse.jsonl"), 16<<30)
	must(t, syscall.Mkfifo(filepath.Join(sessions, "fifo.jsonl"), 0o600))
	must(t, os.Symlink("/dev/zero", filepath.Join(sessions, "zero.jsonl")))
	// The same kinds of journal in Claude Code's projects directory.
	projects := filepath.Join(home, ".claude", "projects", "-work-x")
	must(t, os.MkdirAll(projects, 0o700))
	sparseFile(t, filepath.Join(projects, "sparse.jsonl"), 16<<30)
	must(t, syscall.Mkfifo(filepath.Join(projects, "fifo.jsonl"), 0o600))
	// Claude Code's side files: registry files linked to /dev/zero, as a
	// FIFO and sparse 4 GiB; subagent sidecars linked to /dev/zero and as a
	// FIFO.
	reg := filepath.Join(home, ".claude", "sessions")
	must(t, os.MkdirAll(reg, 0o700))
	must(t, os.Symlink("/dev/zero", filepath.Join(reg, "4000001.json")))
	must(t, syscall.Mkfifo(filepath.Join(reg, "4000002.json"), 0o600))
	sparseFile(t, filepath.Join(reg, "4000003.json"), 4<<30)
	subs := filepath.Join(projects, "7c7c7c7c-0000-4000-8000-000000000001", "subagents")
	must(t, os.MkdirAll(subs, 0o700))
	must(t, os.Symlink("/dev/zero", filepath.Join(subs, "agent-z.meta.json")))
	must(t, syscall.Mkfifo(filepath.Join(subs, "agent-f.meta.json"), 0o600))
	for _, a := range []string{"agent-z", "agent-f"} {
		must(t, os.WriteFile(filepath.Join(subs, a+".jsonl"), []byte(`{"type":"user","isSidechain":true,"sessionId":"7c7c7c7c-0000-4000-8000-000000000001","message":{"role":"user","content":"sub"}}`+"\n"), 0o600))
	}
	// A repository, and a session whose working directory has a FIFO as .git.
	repo = filepath.Join(home, "repo")
	must(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o700))
	must(t, os.WriteFile(filepath.Join(repo, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o600))
	evilCwd := filepath.Join(home, "evil")
	must(t, os.MkdirAll(evilCwd, 0o700))
	must(t, syscall.Mkfifo(filepath.Join(evilCwd, ".git"), 0o600))
	must(t, os.WriteFile(filepath.Join(sessions, "evil.jsonl"), []byte(exampleJournal("evil cwd", evilCwd)), 0o600))
	// A tampered revision mark.
	state := filepath.Join(home, ".local", "state", "agentbridge")
	must(t, os.MkdirAll(state, 0o700))
	must(t, os.WriteFile(filepath.Join(state, "revision"), []byte("18446744073709551615\n"), 0o600))
	return exHome, repo
}

// rssKB is this process's resident set in KiB.
func rssKB(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		testenv.Missing(t, "no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// TestEveryAttackAtOnce: with every attack on the homes in place
// (see attackedHome), a hundred POSTs that never send their body held open,
// a 1 MB hostile body, an off-origin redirect attempt and a tampered
// revision mark, the bridge keeps serving, reports a new session at once,
// answers project filters (REST, stream and agentbridge sessions
// --project), and keeps its memory bounded.
func TestEveryAttackAtOnce(t *testing.T) {
	home := t.TempDir()
	exHome, repo := attackedHome(t, home)
	base := rssKB(t)
	env := []string{"HOME=" + home, "EXAMPLE_AGENT_HOME=" + exHome}
	u, stop, stderr := startServe(t, env, "--listen", "127.0.0.1:0")
	defer stop()
	token := u.Query().Get("token")
	host := u.Host
	client := &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string) {
		t.Helper()
		r, _ := http.NewRequest("GET", "http://"+host+path, nil)
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(r)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// A hundred unauthenticated POSTs that declare a body and never send it.
	var stalled []net.Conn
	for range 100 {
		c, err := net.DialTimeout("tcp", host, time.Minute)
		must(t, err)
		fmt.Fprintf(c, "POST /v1/validate/snapshot HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 500000\r\n\r\n{", host)
		stalled = append(stalled, c)
	}
	defer func() {
		for _, c := range stalled {
			c.Close()
		}
	}()

	// A new session appears and is reported, of the example agent and of
	// Claude Code.
	must(t, os.WriteFile(filepath.Join(exHome, "sessions", "fresh.jsonl"), []byte(exampleJournal("fresh", repo)), 0o600))
	const claudeSID = "7c7c7c7c-0000-4000-8000-0000000000c1"
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	must(t, os.WriteFile(filepath.Join(home, ".claude", "projects", "-work-x", claudeSID+".jsonl"),
		[]byte(fmt.Sprintf(`{"uuid":"u-001","sessionId":%q,"cwd":"/work/x","version":"2.1.200","timestamp":%q,"isSidechain":false,"userType":"external","type":"user","promptId":"p","message":{"role":"user","content":"hello"}}`+"\n", claudeSID, ts)), 0o600))
	deadline := time.Now().Add(time.Minute) // a hang bound: -race on a loaded machine
	for {
		_, body := get("/v1/sessions")
		if strings.Contains(body, `"id":"fresh"`) && strings.Contains(body, `"id":"evil"`) && strings.Contains(body, `"id":"`+claudeSID+`"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new session was not reported within a minute under attack: %.500s\nlog:\n%s", body, stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Project filters answer although a session's .git is a FIFO.
	start := time.Now()
	code, body := get("/v1/sessions?project=" + url.QueryEscape(repo))
	if code != 200 || !strings.Contains(body, `"id":"fresh"`) || strings.Contains(body, `"id":"evil"`) {
		t.Errorf("GET /v1/sessions?project=: %d %.300s; want the fresh session only", code, body)
	}
	r, _ := http.NewRequest("GET", "http://"+host+"/v1/events?project="+url.QueryEscape(repo), nil)
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(r)
	if err != nil {
		t.Fatalf("the filtered stream: %v", err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && sc.Text() != "event: reset" {
	}
	resp.Body.Close()
	type cliResult struct {
		out string
		err error
	}
	cli := make(chan cliResult, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		err := sessionsMain(t.Context(), []string{"--json", "--project", repo}, append(env, "AGENTBRIDGE_ADDR="+host), &stdout, &stderr)
		cli <- cliResult{stdout.String(), err}
	}()
	select {
	case r := <-cli:
		var list sessionList
		if err := json.Unmarshal([]byte(r.out), &list); r.err != nil || err != nil || len(list.Sessions) != 1 || list.Sessions[0].Snapshot.ID != "fresh" {
			t.Errorf("agentbridge sessions --project: %v %.300s; want the fresh session only", r.err, r.out)
		}
	case <-time.After(time.Minute):
		t.Errorf("agentbridge sessions --project did not answer within a minute (a FIFO as a session's .git)")
	}
	t.Logf("project filters took %v with a FIFO as a session's .git", time.Since(start))

	// Revisions stay below 2^53 despite the tampered mark.
	if _, body := get("/v1/sessions"); !strings.Contains(body, `"revision":`) {
		t.Errorf("no revision: %.200s", body)
	} else {
		rev, _ := strconv.ParseUint(strings.SplitN(strings.SplitN(body, `"revision":`, 2)[1], ",", 2)[0], 10, 64)
		if rev == 0 || rev >= 1<<53 {
			t.Errorf("revision %d, want 0 < r < 2^53", rev)
		}
	}

	// A 1 MB hostile body gets a bounded answer.
	big := "[" + strings.TrimSuffix(strings.Repeat("{},", (1<<20-2)/3), ",") + "]"
	pr, _ := http.NewRequest("POST", "http://"+host+"/v1/validate/reset", strings.NewReader(big))
	pr.Header.Set("Authorization", "Bearer "+token)
	pr.Header.Set("Content-Type", "application/json")
	if resp, err := client.Do(pr); err != nil {
		t.Errorf("POST a 1 MB array: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(b) > 256<<10 {
			t.Errorf("a 1 MB array got a %d KiB answer", len(b)>>10)
		}
	}

	// No redirect leaves the origin; the cookie is not the token.
	c, err := net.DialTimeout("tcp", host, time.Minute)
	must(t, err)
	fmt.Fprintf(c, "GET //evil.com/?token=%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", token, host)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	rr, err := http.ReadResponse(bufio.NewReader(c), nil)
	c.Close()
	if err != nil {
		t.Fatalf("GET //evil.com/: %v", err)
	}
	if loc := rr.Header.Get("Location"); strings.HasPrefix(loc, "//") || strings.Contains(loc, "evil.com") && !strings.HasPrefix(loc, "/evil.com") {
		t.Errorf("GET //evil.com/?token= redirects to %q", loc)
	}
	for _, ck := range rr.Cookies() {
		if strings.Contains(ck.Value, token) {
			t.Errorf("the cookie carries the token")
		}
		if ck.Value != api.SessionCookie(token) {
			t.Errorf("cookie %q, want the session credential", ck.Value)
		}
	}

	// The stalled POSTs were answered and closed, not held.
	var wg sync.WaitGroup
	var open sync.Map
	for i, c := range stalled {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A held POST would never be answered: a minute is a hang
			// bound, not a timing.
			c.SetReadDeadline(time.Now().Add(time.Minute))
			br := bufio.NewReader(c)
			if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 401 {
				open.Store(i, true)
				return
			}
		}()
	}
	wg.Wait()
	n := 0
	open.Range(func(any, any) bool { n++; return true })
	if n > 0 {
		t.Errorf("%d of 100 stalled POSTs were not answered 401", n)
	}

	limit := int64(150 << 10)
	if raceEnabled {
		limit *= 3
	}
	if grew := rssKB(t) - base; grew > limit {
		t.Errorf("the resident set grew by %d MiB under attack, want under %d MiB", grew>>10, limit>>10)
	}
	if strings.Contains(stderr.String(), token) || strings.Contains(stderr.String(), home) {
		t.Errorf("the log carries the token or a path:\n%s", stderr)
	}
}
