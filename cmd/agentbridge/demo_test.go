package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	journals "github.com/agentbridge/agentbridge/sources/example/demo"
	"github.com/agentbridge/agentbridge/validate"
)

// TestMain runs the test binary as a demo session's process when the demo
// starts it so (the demo re-executes its own executable).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == demoAgentCmd {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestReplayJournals: the demo writes every bundled journal, record by
// record, with each timestamp moved to the time of writing.
func TestReplayJournals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Now()
	if err := replayJournals(context.Background(), journals.Journals, dir, 1000, false, nil); err != nil {
		t.Fatal(err)
	}
	names, _ := bundledJournals(journals.Journals)
	if len(names) < 5 {
		t.Fatalf("%d bundled journals, want at least 5", len(names))
	}
	ts := regexp.MustCompile(`"ts":"[^"]*"`)
	for _, name := range names {
		want, _ := fs.ReadFile(journals.Journals, name)
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if g, w := ts.ReplaceAllString(string(got), `"ts":""`), ts.ReplaceAllString(string(want), `"ts":""`); g != w {
			t.Errorf("%s replayed as\n%s\nwant\n%s", name, g, w)
		}
		for _, m := range ts.FindAllString(string(got), -1) {
			at := recordTime(m)
			if at.Before(start.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
				t.Errorf("%s: timestamp %s is not the time of writing", name, m)
			}
		}
	}
}

func TestReplayJournalsStopsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- replayJournals(ctx, journals.Journals, t.TempDir(), 1, true, nil) }()
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "canceled") {
			t.Errorf("replayJournals after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("replayJournals did not stop")
	}
}

func TestDemoRejectsBadSpeed(t *testing.T) {
	t.Parallel()
	var out, errw strings.Builder
	err := demoMain(context.Background(), []string{"--speed", "0"}, nil, &out, &errw)
	if err == nil || !strings.Contains(err.Error(), "--speed") {
		t.Errorf("demo --speed 0 = %v, want an error naming --speed", err)
	}
}

// TestDemoEndToEnd runs the demo subcommand fast and reads its sessions
// the way the README says, with no --addr: the client subcommands find
// the demo through the address it records, every bundled session appears
// and reaches its final state, and `open --print` signs a browser in.
func TestDemoEndToEnd(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := []string{"HOME=" + tmp, "XDG_STATE_HOME=" + tmp, "XDG_CONFIG_HOME=" + tmp}
	ctx, cancel := context.WithCancel(context.Background())
	out := &logBuffer{}
	errw := &logBuffer{}
	done := make(chan error, 1)
	go func() {
		// Not the default address: tests run in parallel, and a real
		// bridge may hold it. What is found is the recorded address.
		done <- demoMain(ctx, []string{"--speed=100", "--loop=false", "--linger=1h", "--listen=127.0.0.1:0"}, env, out, errw)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("demo = %v; stderr:\n%s", err, errw)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("demo did not stop")
		}
	}
	t.Cleanup(stop)
	waitUntil(t, "the demo to serve", func() bool { return strings.Contains(out.String(), "serving at") })
	if strings.Contains(out.String(), "token=") {
		t.Errorf("the demo printed its token to a pipe:\n%s", out)
	}
	want := map[string]string{
		"0b1e7c52-refactor": "done", "4d2f9a11-approval": "waiting", "9a7c3e05-subagents": "done",
		"c5e80f3a-failure": "failed", "e81d4b77-exit": "exited",
	}
	var last string
	var final []sessionEntry
	waitUntil(t, "every session in its final state", func() bool {
		var stdout, stderr strings.Builder
		if err := sessionsMain(context.Background(), []string{"--json", "--source", "example"}, env, &stdout, &stderr); err != nil {
			last = fmt.Sprintf("%v %s", err, stderr.String())
			return false
		}
		var body sessionList
		if err := json.Unmarshal([]byte(stdout.String()), &body); err != nil {
			last = err.Error()
			return false
		}
		got := map[string]string{}
		for i := range body.Sessions {
			got[body.Sessions[i].Snapshot.ID] = shownStatus(&body.Sessions[i])
		}
		last, final = fmt.Sprint(got), body.Sessions
		return last == fmt.Sprint(want)
	}, func() string { return last })
	// Every session ran as a process of the demo, in a directory of its
	// own: the ones still running are what Terminay takes, the ended one
	// is not host-ready.
	for _, e := range final {
		s := e.Snapshot
		if s.PID <= 0 || !strings.HasPrefix(s.Cwd, os.TempDir()) {
			t.Errorf("%s: pid %d cwd %q, want the process the demo ran and its directory", s.ID, s.PID, s.Cwd)
		}
		if ready := agentbridge.HostReady(&s, e.Ended); ready != (e.Ended == nil) {
			t.Errorf("%s: host-ready %v with end %+v", s.ID, ready, e.Ended)
		}
		if is := validate.SnapshotAs(s, nil, validate.Host); e.Ended == nil && len(is) > 0 {
			t.Errorf("%s: the host would refuse %+v: %v", s.ID, s, is)
		}
	}
	if !strings.Contains(out.String(), "every journal replayed") {
		waitUntil(t, "the end of the replay", func() bool { return strings.Contains(out.String(), "every journal replayed") })
	}

	// The table finds it too, and shows the ids.
	var table, stderr strings.Builder
	if err := sessionsMain(context.Background(), nil, env, &table, &stderr); err != nil {
		t.Fatalf("sessions: %v %s", err, stderr.String())
	}
	if !strings.Contains(table.String(), "4d2f9a11") {
		t.Errorf("sessions table without the ids:\n%s", table.String())
	}

	// open --print gives a URL that signs a browser in.
	var link strings.Builder
	if err := runArgs(context.Background(), "open", []string{"--print"}, env, strings.NewReader(""), &link, &stderr, watchBackoff); err != nil {
		t.Fatalf("open --print: %v %s", err, stderr.String())
	}
	signIn(t, strings.TrimSpace(link.String()))

	// Once the demo stops, its address is forgotten.
	stop()
	if _, ok := readDemoAddr(tmp + "/agentbridge"); ok {
		t.Error("the demo left its address file behind")
	}
}

// waitUntil polls cond (a condition on another process's state) for up
// to 10 s; detail, when given, says what was last seen.
func waitUntil(t *testing.T, what string, cond func() bool, detail ...func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			for _, d := range detail {
				what += " (last seen: " + d() + ")"
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
