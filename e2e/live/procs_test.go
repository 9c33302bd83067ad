package live

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A scenario ends only once every process it started has exited: the
// CLI, whatever the CLI started (Qwen Code and Gemini CLI relaunch
// themselves in a child node; hooks, tools, language servers), and what
// those started, so that nothing writes into the test's directories while
// t.TempDir removes them. Each CLI runs with a marker of its own in its
// environment (children inherit it, and stay marked when their parent
// exits first and they are handed to init); a tmux pane's processes are
// also found by their session (tmux makes the pane a session leader), and
// any child of a member is a member. The rig waits for each member with a
// pidfd (an event, no polling); what has not exited after a grace is
// killed.

// procMarker is the environment variable that marks a CLI's processes.
const procMarker = "AGENTBRIDGE_LIVE_PROCS"

var procN atomic.Int64

// procSet names the processes of one CLI: those that carry env (a
// "NAME=value" marker) or belong to one of the sessions sids.
type procSet struct {
	env  string
	sids []int
}

func newProcSet() *procSet {
	return &procSet{env: fmt.Sprintf("%s=%d-%d", procMarker, os.Getpid(), procN.Add(1))}
}

// procInfo is what /proc/<pid>/stat says of one process.
type procInfo struct {
	pid, ppid, sid int
	zombie         bool
}

func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// pid (comm) state ppid pgrp session ...; comm may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return procInfo{}, false
	}
	p := procInfo{pid: pid, zombie: f[0] == "Z" || f[0] == "X"}
	p.ppid, _ = strconv.Atoi(f[1])
	p.sid, _ = strconv.Atoi(f[3])
	return p, true
}

func (s *procSet) marked(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	return slices.ContainsFunc(bytes.Split(b, []byte{0}), func(v []byte) bool { return string(v) == s.env })
}

// members lists the set's processes that have not exited (zombies have:
// they hold no files and write nothing).
func (s *procSet) members() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var all []procInfo
	in := map[int]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		p, ok := readStat(pid)
		if !ok || p.zombie {
			continue
		}
		all = append(all, p)
		if slices.Contains(s.sids, p.sid) || s.marked(pid) {
			in[pid] = true
		}
	}
	// Children of members are members, marked or not.
	for grew := true; grew; {
		grew = false
		for _, p := range all {
			if !in[p.pid] && in[p.ppid] {
				in[p.pid], grew = true, true
			}
		}
	}
	out := make([]int, 0, len(in))
	for pid := range in {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// signal sends sig to every member.
func (s *procSet) signal(sig syscall.Signal) {
	for _, pid := range s.members() {
		syscall.Kill(pid, sig)
	}
}

// await waits until every member has exited: members that have not after
// grace are killed, and any left a minute after that fail the test. It
// looks again after each wait, for processes started meanwhile.
func (s *procSet) await(t *testing.T, grace time.Duration) {
	t.Helper()
	deadline := time.Now().Add(grace)
	killed := false
	for {
		pids := s.members()
		if len(pids) == 0 {
			return
		}
		left := awaitExit(pids, time.Until(deadline))
		if len(left) == 0 {
			continue
		}
		if killed {
			t.Errorf("processes %v of the CLI still run a minute after SIGKILL", left)
			return
		}
		t.Logf("processes %v of the CLI had not exited after %v: killing them", left, grace)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		killed = true
		deadline = time.Now().Add(time.Minute)
	}
}

// awaitGone waits until pid has exited (an event on its pidfd), killing
// it after timeout.
func awaitGone(pid int, timeout time.Duration) {
	if len(awaitExit([]int{pid}, timeout)) > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
		awaitExit([]int{pid}, time.Minute)
	}
}

// tracked marks cmd's processes (cmd.Env must be set) and makes the test
// end only once all of them have exited: at the test's end they get
// SIGTERM, then SIGKILL after a grace.
func tracked(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	s := newProcSet()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, s.env)
	t.Cleanup(func() {
		s.signal(syscall.SIGTERM)
		s.await(t, 30*time.Second)
	})
	return cmd
}
