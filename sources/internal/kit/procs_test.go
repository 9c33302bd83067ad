package kit

import (
	"slices"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/proc"
)

// TestCreator: of the agent processes sharing a session's cwd, the one
// that may have created it is the one started within the window before
// the session began (up to startSlack after) and taken by no other
// session; none when the agent has no window or the start is unknown.
func TestCreator(t *testing.T) {
	born := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return born.Add(d) }
	cands := []candidate{
		{pid: 1, start: at(-time.Minute)},           // long before: another session's TUI
		{pid: 2, start: at(-3 * time.Second)},       // just before: the creator
		{pid: 3, start: at(500 * time.Millisecond)}, // within the clocks' slack
		{pid: 4, start: at(5 * time.Second)},        // after the session began
	}
	none := func(int) bool { return false }
	for _, tc := range []struct {
		name   string
		window time.Duration
		born   time.Time
		cands  []candidate
		taken  func(int) bool
		want   []int
	}{
		{"no window", 0, born, cands, none, nil},
		{"start unknown", 20 * time.Second, time.Time{}, cands, none, nil},
		{"two in the window", 20 * time.Second, born, cands, none, []int{2, 3}},
		{"the other one taken", 20 * time.Second, born, cands, func(pid int) bool { return pid == 3 }, []int{2}},
		{"a wider window", 2 * time.Minute, born, cands[:2], none, []int{1, 2}},
		{"all taken", 20 * time.Second, born, cands, func(int) bool { return true }, nil},
		{"a new session long after its process", 20 * time.Second, at(time.Hour), cands, none, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Procs{Window: tc.window}
			var got []int
			for _, c := range p.creator(tc.cands, tc.born, tc.taken) {
				got = append(got, c.pid)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("creator = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTopmost: of the agent's processes, a child of another one (the
// agent caught between fork and exec of a tool, or a worker) is left out;
// unrelated processes of the agent, in one cwd or not, all stay.
func TestTopmost(t *testing.T) {
	for _, tc := range []struct {
		name string
		ps   []proc.Process
		want []int
	}{
		{"none", nil, nil},
		{"one TUI", []proc.Process{{PID: 10, PPID: 1}}, []int{10}},
		{"a TUI forking a tool", []proc.Process{{PID: 10, PPID: 1}, {PID: 11, PPID: 10}}, []int{10}},
		{"a fork of a fork", []proc.Process{{PID: 12, PPID: 11}, {PID: 10, PPID: 1}, {PID: 11, PPID: 10}}, []int{10}},
		{"two TUIs", []proc.Process{{PID: 10, PPID: 1}, {PID: 20, PPID: 1}}, []int{10, 20}},
		{"two TUIs, one forking", []proc.Process{{PID: 10, PPID: 1}, {PID: 20, PPID: 1}, {PID: 21, PPID: 20}}, []int{10, 20}},
		{"a TUI started from another's shell", []proc.Process{{PID: 10, PPID: 1}, {PID: 30, PPID: 29}}, []int{10, 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, p := range topmost(tc.ps) {
				got = append(got, p.PID)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("topmost = %v, want %v", got, tc.want)
			}
		})
	}
}
