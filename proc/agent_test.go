package proc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/proc/proctest"
)

var codex = proc.Agent{Names: []string{"codex"}, Runtimes: []string{"node"}}

// TestWritersSkipReaders: of the processes holding a journal open, only
// the one writing it and named like the agent is its writer; tail -f, a
// reader named like the agent and a writer with another name are not.
func TestWritersSkipReaders(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rollout-x.jsonl")
	if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writer := proctest.Hold(t, "codex", p, proctest.Write)
	proctest.Hold(t, "codex", p, proctest.Read) // a reader named like the agent
	proctest.Hold(t, "tee", p, proctest.Write)  // a writer that is not the agent
	reader := proctest.Hold(t, "", p, proctest.Read)
	if tail, err := exec.LookPath("tail"); err == nil {
		proctest.Start(t, exec.Command(tail, "-f", p))
	}

	all, err := proc.FindHolders(proc.Root, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(all, writer.Process.Pid) || !slices.Contains(all, reader.Process.Pid) {
		t.Fatalf("FindHolders = %v, want the writer %d and the reader %d among them", all, writer.Process.Pid, reader.Process.Pid)
	}
	got, err := proc.FindWriters(proc.Root, p, codex)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{writer.Process.Pid}; !slices.Equal(got, want) {
		t.Errorf("FindWriters(codex) = %v, want %v", got, want)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := proc.KeyOf(fi)
	held, err := proc.Writers(proc.Root, nil, codex)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{writer.Process.Pid}; !slices.Equal(held[k], want) {
		t.Errorf("Writers(codex)[file] = %v, want %v", held[k], want)
	}
	// An agent whose executable is unknown: every writer, still no reader.
	got, _ = proc.FindWriters(proc.Root, p, proc.Agent{})
	if len(got) != 2 || slices.Contains(got, reader.Process.Pid) {
		t.Errorf("FindWriters(any agent) = %v, want the two writers", got)
	}
}

// fakeProc writes a /proc entry for pid with the given executable, command
// name and command line.
func fakeProc(t *testing.T, root string, pid int, exe, comm string, args ...string) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(dir, "exe")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(comm+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cl []byte
	for _, a := range args {
		cl = append(cl, a...)
		cl = append(cl, 0)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmdline"), cl, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAgentMatch(t *testing.T) {
	claude := proc.Agent{Names: []string{"claude"}, Runtimes: []string{"node", "bun"}, Packages: []string{"claude-code"}, Versions: []string{"claude"}} // as claudecode.Agent
	root := t.TempDir()
	tests := []struct {
		name  string
		agent proc.Agent
		exe   string
		comm  string
		args  []string
		want  bool
	}{
		{"codex binary", codex, "/usr/local/bin/codex", "codex", []string{"codex"}, true},
		{"codex deleted on upgrade", codex, "/usr/local/bin/codex (deleted)", "codex", []string{"codex"}, true},
		{"node running codex.js", codex, "/usr/bin/node", "node", []string{"node", "/usr/lib/node_modules/@openai/codex/bin/codex.js"}, true},
		{"node with options running codex", codex, "/usr/bin/node", "node", []string{"node", "--no-warnings", "/opt/codex/codex.js"}, true},
		{"node running something else", codex, "/usr/bin/node", "node", []string{"node", "/srv/app/server.js", "codex"}, false},
		{"tail", codex, "/usr/bin/tail", "tail", []string{"tail", "-f", "/home/u/.codex/sessions/rollout.jsonl"}, false},
		{"less", codex, "/usr/bin/less", "less", []string{"less", "rollout.jsonl"}, false},
		{"a binary named codex-like", codex, "/usr/bin/codexfoo", "codexfoo", []string{"codexfoo"}, false},
		{"codex release binary", codex, "/opt/codex-x86_64-unknown-linux-musl", "codex-x86_64-un", []string{"codex-x86_64-unknown-linux-musl"}, true},
		{"codex release binary, comm only", codex, "/opt/renamed", "codex-x86_64-un", []string{"renamed"}, true},
		{"claude native", claude, "/home/u/.local/share/claude/versions/2.1.3", "claude", []string{"claude"}, true},
		{"claude native, started by its version's path", claude, "/home/u/.local/share/claude/versions/2.1.3", "2.1.3", []string{"/home/u/.local/share/claude/versions/2.1.3"}, true},
		{"claude on node", claude, "/usr/bin/node", "node", []string{"node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"}, true},
		{"claude from npm", claude, "/home/u/.npm-global/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "claude", []string{"claude"}, true},
		{"claude from npm, its platform package", claude, "/usr/lib/node_modules/@anthropic-ai/claude-code-linux-x64/claude", "claude", []string{"claude"}, true},
		{"a program in a directory named claude", claude, "/home/u/src/claude/bin/server", "server", []string{"server"}, false},
		{"a tool in a claude directory", claude, "/home/u/.local/share/claude/tools/rg", "rg", []string{"rg"}, false},
		{"node running a script in a directory named claude", claude, "/usr/bin/node", "node", []string{"node", "/home/u/claude/server.js"}, false},
		{"node running a script in a directory named codex", codex, "/usr/bin/node", "node", []string{"node", "/srv/codex/app.js"}, false},
		{"vim", claude, "/usr/bin/vim", "vim", []string{"vim", "x.jsonl"}, false},
		{"unknown agent: anything", proc.Agent{}, "/usr/bin/tail", "tail", []string{"tail"}, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid := 100 + i
			fakeProc(t, root, pid, tt.exe, tt.comm, tt.args...)
			if got := tt.agent.Match(root, pid); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
	if codex.Match(root, 99999) {
		t.Error("a process that does not exist matched")
	}
}
