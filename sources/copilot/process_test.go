package copilot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLockPID(t *testing.T) {
	for name, want := range map[string]int{
		"inuse.123.lock":      123,
		"inuse.4194304.lock":  4194304,
		"inuse.4194305.lock":  0, // above the kernel's limit
		"inuse.0.lock":        0,
		"inuse.-1.lock":       0,
		"inuse.0123.lock":     0, // not canonical
		"inuse..lock":         0,
		"inuse.12.lock.tmp":   0,
		"inuse.12345678.lock": 0,
		"events.jsonl":        0,
		"123.lock":            0,
	} {
		if got := lockPID(name); got != want {
			t.Errorf("lockPID(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestLockPIDs(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"inuse.7.lock", "workspace.yaml", "inuse.x.lock", "events.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := lockPIDs(dir); len(got) != 1 || got[0] != 7 {
		t.Errorf("lockPIDs = %v, want [7]", got)
	}
	if got := lockPIDs(filepath.Join(dir, "missing")); got != nil {
		t.Errorf("lockPIDs of a missing directory = %v", got)
	}
}
