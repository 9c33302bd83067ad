package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// fakeProc writes /proc/<pid>/stat files under a temporary root, one per
// entry of parents (pid -> ppid), and returns the root.
func fakeProc(t *testing.T, parents map[int]int) string {
	t.Helper()
	root := t.TempDir()
	for pid, ppid := range parents {
		dir := filepath.Join(root, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%d (sh (x)) S %d %d %d 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, ppid, pid, pid, 1000+pid)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDescends(t *testing.T) {
	// 1 ─ 10 ─ 20 ─ 30
	//        └ 21
	// 40 has a parent (35) that vanished; 50 and 51 are each other's parent;
	// 60 is its own parent; 70's stat is garbage.
	root := fakeProc(t, map[int]int{
		1: 0, 10: 1, 20: 10, 21: 10, 30: 20,
		40: 35,
		50: 51, 51: 50,
		60: 60,
	})
	if err := os.MkdirAll(filepath.Join(root, "70"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "70", "stat"), []byte("70 (x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		pid, ancestor int
		want          bool
	}{
		{"itself", 30, 30, true},
		{"parent", 30, 20, true},
		{"grandparent", 30, 10, true},
		{"init", 30, 1, true},
		{"sibling branch", 30, 21, false},
		{"descendant is not an ancestor", 10, 30, false},
		{"vanished pid", 99, 1, false},
		{"vanished pid equal to ancestor", 99, 99, false},
		{"vanished parent mid-walk", 40, 1, false},
		{"loop between two", 50, 1, false},
		{"loop reaches ancestor", 50, 51, true},
		{"self parent", 60, 1, false},
		{"malformed stat", 70, 70, false},
		{"zero pid", 0, 1, false},
		{"negative ancestor", 30, -1, false},
		{"zero ancestor", 30, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Descends(root, tt.pid, tt.ancestor); got != tt.want {
				t.Errorf("Descends(%d, %d) = %v, want %v", tt.pid, tt.ancestor, got, tt.want)
			}
		})
	}
}

func TestDescendsDeepChainIsBounded(t *testing.T) {
	parents := map[int]int{}
	for pid := 2; pid <= maxDepth+10; pid++ {
		parents[pid] = pid - 1
	}
	parents[1] = 0
	root := fakeProc(t, parents)
	if Descends(root, maxDepth+10, 1) {
		t.Error("a chain deeper than maxDepth must not be followed to the end")
	}
	if !Descends(root, 100, 1) {
		t.Error("a short chain must reach init")
	}
}

func TestDescendsRealProcess(t *testing.T) {
	self, parent := os.Getpid(), os.Getppid()
	if !Descends("/proc", self, self) {
		t.Error("the test process should count as descending from itself")
	}
	if !Descends("/proc", self, parent) {
		t.Error("the test process should descend from its parent")
	}
	if !Descends("/proc", self, 1) {
		t.Error("the test process should descend from pid 1")
	}
	if Descends("/proc", parent, self) {
		t.Error("the parent does not descend from the test process")
	}
	if Descends("/proc", 0x3fffff, 1) {
		t.Error("a pid that does not exist descends from nothing")
	}
}
