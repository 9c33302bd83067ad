package proc

import (
	"encoding/binary"
	"testing"
	"time"
)

// procargs builds a kern.procargs2 answer as macOS lays it out.
func procargs(argc int32, exe string, pad int, rest string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(argc))
	b = append(b, exe...)
	b = append(b, make([]byte, 1+pad)...)
	return append(b, rest...)
}

func TestParseProcArgs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       []byte
		limit    int64
		exe      string
		args     string
		wantsErr bool
	}{
		{name: "node script, environment left out",
			in:  procargs(3, "/opt/homebrew/bin/node", 7, "node\x00/usr/local/lib/node_modules/@openai/codex/bin/codex.js\x00--yolo\x00HOME=/Users/a\x00PATH=/bin\x00"),
			exe: "/opt/homebrew/bin/node", args: "node\x00/usr/local/lib/node_modules/@openai/codex/bin/codex.js\x00--yolo\x00"},
		{name: "no padding", in: procargs(1, "/bin/claude", 0, "claude\x00TERM=x\x00"), exe: "/bin/claude", args: "claude\x00"},
		{name: "no arguments", in: procargs(0, "/bin/x", 3, "A=b\x00"), exe: "/bin/x", args: ""},
		{name: "last argument cut short", in: procargs(2, "/bin/x", 0, "x\x00unterminat"), exe: "/bin/x", args: "x\x00unterminat"},
		{name: "argc beyond what follows", in: procargs(5, "/bin/x", 0, "x\x00"), exe: "/bin/x", args: "x\x00"},
		{name: "limit", in: procargs(2, "/bin/x", 0, "abcdef\x00ghi\x00"), limit: 4, exe: "/bin/x", args: "abcd"},
		{name: "short", in: []byte{1, 0}, wantsErr: true},
		{name: "negative argc", in: procargs(-1, "/bin/x", 0, ""), wantsErr: true},
		{name: "unterminated path", in: binary.LittleEndian.AppendUint32(nil, 1), wantsErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe, args, err := parseProcArgs(tc.in, tc.limit)
			if tc.wantsErr {
				if err == nil {
					t.Fatalf("parseProcArgs = %q, %q; want an error", exe, args)
				}
				return
			}
			if err != nil || exe != tc.exe || string(args) != tc.args {
				t.Fatalf("parseProcArgs = %q, %q, %v; want %q, %q", exe, args, err, tc.exe, tc.args)
			}
		})
	}
}

// The arguments parseProcArgs returns are what Agent.Match reads on Linux
// from /proc/<pid>/cmdline, so the same agents match on macOS.
func TestProcArgsMatchLikeCmdline(t *testing.T) {
	codex := Agent{Names: []string{"codex"}, Runtimes: []string{"node"}, Packages: []string{"codex"}}
	_, args, err := parseProcArgs(procargs(2, "/opt/homebrew/bin/node", 2, "node\x00/opt/homebrew/lib/node_modules/@openai/codex/bin/codex.js\x00"), 4096)
	if err != nil || !codex.matchScript(args) {
		t.Fatalf("codex under node does not match: %q, %v", args, err)
	}
}

func TestKinfoStat(t *testing.T) {
	st := kinfoStat(42, 1, 1_780_000_000, 250_000)
	at, err := StartedAt(st)
	if err != nil || !at.Equal(time.Unix(1_780_000_000, 250_000_000)) {
		t.Fatalf("StartedAt = %v, %v", at, err)
	}
	if st.PID != 42 || st.PPID != 1 || st.StartTime != 1_780_000_000_250_000 {
		t.Fatalf("kinfoStat = %+v", st)
	}
	// Two processes started a microsecond apart are told apart (pid reuse).
	if kinfoStat(42, 1, 1_780_000_000, 250_001).StartTime == st.StartTime {
		t.Fatal("start times a microsecond apart compare equal")
	}
}

func FuzzParseProcArgs(f *testing.F) {
	f.Add(procargs(2, "/bin/node", 3, "node\x00x.js\x00A=b\x00"), int64(0))
	f.Add([]byte{}, int64(10))
	f.Add(procargs(1<<30, "/x", 0, "a"), int64(1))
	f.Fuzz(func(t *testing.T, b []byte, limit int64) {
		exe, args, err := parseProcArgs(b, limit)
		if err != nil {
			return
		}
		if len(exe)+len(args) > len(b) {
			t.Fatalf("parsed more than given: %d+%d > %d", len(exe), len(args), len(b))
		}
		if limit > 0 && int64(len(args)) > limit {
			t.Fatalf("args %d bytes over limit %d", len(args), limit)
		}
	})
}
