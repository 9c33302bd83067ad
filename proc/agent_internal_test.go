package proc

import (
	"strconv"
	"strings"
	"testing"
)

func TestFDInfoFlags(t *testing.T) {
	tests := []struct {
		in    string
		flags uint64
		ok    bool
		write bool
	}{
		{"pos:\t0\nflags:\t0100000\nmnt_id:\t25\nino:\t1\n", 0o100000, true, false},
		{"pos:\t12\nflags:\t02102001\nmnt_id:\t25\n", 0o2102001, true, true}, // O_WRONLY|O_APPEND|O_CLOEXEC
		{"pos:\t0\nflags:\t0100002\n", 0o100002, true, true},                 // O_RDWR
		{"pos:\t0\n", 0, false, false},
		{"flags:\tnot-octal\n", 0, false, false},
		{"flags:\t9\n", 0, false, false},
		{"", 0, false, false},
	}
	for _, tt := range tests {
		n, ok := fdinfoFlags([]byte(tt.in))
		if n != tt.flags || ok != tt.ok {
			t.Errorf("fdinfoFlags(%q) = %o, %v; want %o, %v", tt.in, n, ok, tt.flags, tt.ok)
		}
		if w := ok && n&accessMode != readOnly; w != tt.write {
			t.Errorf("fdinfoFlags(%q): for writing %v, want %v", tt.in, w, tt.write)
		}
	}
}

// FuzzFDInfoFlags: any fdinfo content gives flags or not, never a panic;
// flags found are the octal number of the first "flags:" line.
func FuzzFDInfoFlags(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := fdinfoFlags(b)
		if !ok {
			if n != 0 {
				t.Fatalf("fdinfoFlags(%q) failed with %o", b, n)
			}
			return
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, found := strings.CutPrefix(line, "flags:"); found {
				if want, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64); err != nil || want != n {
					t.Fatalf("fdinfoFlags(%q) = %o, the line says %q", b, n, v)
				}
				return
			}
		}
		t.Fatalf("fdinfoFlags(%q) = %o with no flags line", b, n)
	})
}

// FuzzMatchScript: any command line is matched or not, never a panic; a
// command line without a script never matches.
func FuzzMatchScript(f *testing.F) {
	a := Agent{Names: []string{"codex", "claude"}, Runtimes: []string{"node"}, Packages: []string{"claude-code"}}
	f.Fuzz(func(t *testing.T, cmdline []byte) {
		got := a.matchScript(cmdline)
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		script := false
		for _, s := range args[min(1, len(args)):] {
			if s != "" && !strings.HasPrefix(s, "-") {
				script = true
			}
		}
		if got && !script {
			t.Fatalf("matchScript(%q) matched without a script", cmdline)
		}
	})
}
