package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// fakeAgentEnv makes the test binary a stand-in for an agent's process
// (TestMain): it opens the files its arguments name for appending, as an
// agent holds its journal open, says "ready", and runs until its standard
// input ends, which is when the test that started it ends it (or dies).
const fakeAgentEnv = "AGENTBRIDGE_E2E_FAKE_AGENT"

// fakeAgent is the test binary run as a stand-in agent.
func fakeAgent() {
	for _, p := range os.Args[1:] {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake agent:", err)
			os.Exit(1)
		}
		defer f.Close()
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startFakeAgent runs a process named name (its command name, as the
// bridge reads it from /proc) in dir, holding the files hold open for
// writing, until the test ends: what a bridge that finds a session's
// process by its agent's name and working directory, or by the journal it
// holds open, binds the session to, so that a replayed journal is written
// by a live agent, as a recorded one was.
func startFakeAgent(t *testing.T, name, dir string, hold ...string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, hold...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fakeAgentEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill() // at once: a binary built with -race sleeps a second before it exits
		_ = cmd.Wait()
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the stand-in %s did not start: %q %v", name, line, err)
	}
}
