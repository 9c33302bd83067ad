package proc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/proc/proctest"
)

// BenchmarkWriters measures one pass over /proc for the journals' writers
// (fdinfo read for each matching descriptor, the agent matched once per
// process) against the plain holder pass it replaces, with 20 journals
// held open by readers and writers.
func BenchmarkWriters(b *testing.B) {
	dir := b.TempDir()
	for i := range 20 {
		p := filepath.Join(dir, "rollout-"+string(rune('a'+i))+".jsonl")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		flag, name := proctest.Read, "tail"
		if i%2 == 0 {
			flag, name = proctest.Write, "codex"
		}
		proctest.Hold(b, name, p, flag)
	}
	match := func(target string) bool { return strings.HasSuffix(target, ".jsonl") }
	b.Run("OpenFiles", func(b *testing.B) {
		for b.Loop() {
			if _, err := proc.OpenFiles(proc.Root, match); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Writers", func(b *testing.B) {
		for b.Loop() {
			if _, err := proc.Writers(proc.Root, match, codex); err != nil {
				b.Fatal(err)
			}
		}
	})
}
