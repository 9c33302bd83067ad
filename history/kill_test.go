package history

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// killChild names the database the re-executed test binary writes into
// until it is killed.
const killChild = "AGENTBRIDGE_HISTORY_KILL_CHILD"

// turnFacts is one whole turn of session i: started, a tool, usage, done.
func turnFacts(i int) []hub.Fact {
	ss := &session{source: "kill", id: "s" + strconv.Itoa(i), harness: "x", model: "gpt-5", fresh: true}
	at := base + int64(i)*10
	return []hub.Fact{
		ss.fact(at, agentbridge.Event{Kind: agentbridge.KindTurnStarted}),
		ss.fact(at+1, agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "t", Name: "Bash"}),
		ss.fact(at+2, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "t"}),
		ss.fact(at+3, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(100, 10, 0, 0)}),
		ss.fact(at+4, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}),
	}
}

// runKillChild writes turns until it is killed, saying on stdout how many
// are committed every 16.
func runKillChild(path string) {
	s, err := Open(path, Options{Retention: -1})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	go s.Run(context.Background()) //nolint:errcheck // runs until the kill
	var n int
	if err := s.rdb.QueryRow("SELECT COUNT(*) FROM sessions").Scan(&n); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := n; i < n+1_000_000; i++ {
		s.Record(turnFacts(i))
		if i%16 == 15 {
			if err := s.Sync(context.Background()); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Println("committed", i+1)
		}
	}
}

// TestKill9: a writer killed with SIGKILL at several moments leaves a
// database that is consistent (integrity_check ok), holds every turn it
// said was committed, whole (no turn without its tool, its usage or its
// end), and that a new writer continues.
func TestKill9(t *testing.T) {
	if path := os.Getenv(killChild); path != "" {
		runKillChild(path)
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h.db")
	committed := 0
	for round, after := range []int{1, 3, 17, 2, 40} { // kill after that many "committed" lines
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$")
		cmd.Env = append(os.Environ(), killChild+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for seen := 0; seen < after && sc.Scan(); {
			var n int
			if _, err := fmt.Sscanf(sc.Text(), "committed %d", &n); err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: the child said %q", round, sc.Text())
			}
			committed, seen = n, seen+1
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait() //nolint:errcheck // killed
		checkWhole(t, path, committed)
	}
	// The writer continues: a new turn of a committed session.
	s := running(t, path, Options{Retention: -1})
	ss := &session{source: "kill", id: "s0", harness: "x", model: "gpt-5"}
	record(t, s, ss.fact(base+1_000_000, agentbridge.Event{Kind: agentbridge.KindTurnStarted}),
		ss.fact(base+1_000_001, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}))
	got := sessions(t, s, Query{Source: "kill", Limit: MaxLimit})
	for _, h := range got {
		if h.ID == "s0" {
			if len(h.Turns) != 2 || h.Turns[1].Index != 1 || h.Turns[1].EndedAt != base+1_000_001 {
				t.Errorf("s0 after the kills: %+v, want a second turn, ended", h.Turns)
			}
			return
		}
	}
	t.Error("s0 is gone after the kills")
}

func checkWhole(t *testing.T, path string, committed int) {
	t.Helper()
	s, err := Open(path, Options{Retention: -1})
	if err != nil {
		t.Fatalf("open after a kill: %v", err)
	}
	defer s.Close()
	var check string
	if err := s.rdb.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	var sessions, whole int
	if err := s.rdb.QueryRow("SELECT COUNT(*) FROM sessions").Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM sessions s WHERE
		(SELECT COUNT(*) FROM turns t WHERE t.sid = s.sid AND t.ended_at IS NOT NULL AND t.outcome = 'success' AND t.tools = 1) = 1 AND
		(SELECT COUNT(*) FROM tools o WHERE o.sid = s.sid AND o.ended_at IS NOT NULL) = 1 AND
		(SELECT SUM(input) FROM usage u WHERE u.sid = s.sid) = 100`).Scan(&whole); err != nil {
		t.Fatal(err)
	}
	if sessions < committed || whole != sessions {
		t.Errorf("after a kill: %d sessions (%d whole), want at least the %d committed, all whole", sessions, whole, committed)
	}
}
