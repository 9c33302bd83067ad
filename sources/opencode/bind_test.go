package opencode

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestProcessBinding: each opencode session is bound to the opencode
// process running in its directory (a fake /proc tree), by the binder's
// rules: the process's name (another program in the directory is not
// it), its cwd (a process elsewhere is not it), its start time (one
// started after the session's last write is another session's); the
// session ends when its process does, a pid reused by another program
// does not take it up again, a resumed session (opencode -s, a new
// process) is bound again at its next write, and of two processes in one
// directory a new session gets the one no other session has.
func TestProcessBinding(t *testing.T) {
	home := t.TempDir()
	w := openWriter(t, filepath.Join(home, "opencode.db"))
	for _, q := range oldSchema {
		w.exec(q)
	}
	now := time.Now()
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	tree := proctest.Fake(t)
	add := func(pid int, exe, cwd string, started time.Time) {
		tree.Add(proctest.Proc{PID: pid, PPID: 1, Exe: exe, Cwd: cwd, Started: started})
	}
	add(10, "/usr/bin/opencode", "/srv/a", now.Add(-time.Hour))
	add(11, "/usr/bin/vim", "/srv/b", now.Add(-time.Hour))
	add(12, "/usr/bin/opencode", "/srv/c", now.Add(-5*time.Minute))
	add(13, "/usr/bin/opencode", "/srv/elsewhere", now.Add(-time.Hour))
	session := func(id, dir string, updated int64) {
		w.exec("INSERT OR REPLACE INTO session (id, project_id, directory, title, time_created, time_updated) VALUES (?, 'p', ?, ?, ?, ?)", id, dir, "t "+id, ms(-20*time.Minute), updated)
	}
	session("ses_a", "/srv/a", ms(-time.Minute))    // its process: 10
	session("ses_b", "/srv/b", ms(-time.Minute))    // only vim there
	session("ses_c", "/srv/c", ms(-10*time.Minute)) // 12 started after its last write
	session("ses_d", "/srv/d", ms(-time.Minute))    // no process there
	h := sourcestest.Start(t, New(sources.Options{Home: home, Linger: -1, Processes: tree}), nil)
	is := sourcestest.StatusPID
	h.WaitFor(t, "ses_a bound to its process", is("ses_a", agentbridge.StatusIdle, 10))
	h.WaitFor(t, "ses_b ended: vim is not opencode", is("ses_b", sourcestest.StatusExited, 0))
	h.WaitFor(t, "ses_c ended: its directory's opencode started after its last write", is("ses_c", sourcestest.StatusExited, 0))
	h.WaitFor(t, "ses_d ended: no opencode in its directory", is("ses_d", sourcestest.StatusExited, 0))

	tree.Kill(10)
	h.WaitFor(t, "ses_a ended with its process", is("ses_a", sourcestest.StatusExited, 10))

	// The pid is reused by another program in the same directory: not
	// opencode, so a write finds no process for the session.
	add(10, "/usr/bin/bash", "/srv/a", time.Now())
	session("ses_a", "/srv/a", ms(time.Second))
	time.Sleep(100 * time.Millisecond) // a wrong binding would show by now
	if s, _ := h.Shown("ses_a"); s.Status != sourcestest.StatusExited || tree.Watched(10) {
		t.Fatalf("ses_a %+v: taken up by the program that reused its pid", s)
	}

	// Resumed (opencode -s ses_a): a new process writes it.
	add(14, "/usr/bin/opencode", "/srv/a", time.Now())
	session("ses_a", "/srv/a", time.Now().Add(2*time.Second).UnixMilli())
	h.WaitFor(t, "ses_a taken up by the resuming process", is("ses_a", agentbridge.StatusIdle, 14))

	// A second opencode in the same directory begins a new session: the
	// free process is its.
	add(15, "/usr/bin/opencode", "/srv/a", time.Now())
	session("ses_e", "/srv/a", time.Now().Add(3*time.Second).UnixMilli())
	h.WaitFor(t, "ses_e on the second process", is("ses_e", agentbridge.StatusIdle, 15))
	if s, _ := h.Snapshot("ses_a"); s.PID != 14 {
		t.Errorf("ses_a moved to %d", s.PID)
	}
}

// TestProcessBindingByLog: two opencode TUIs in one directory, both
// started before either session was written: opencode's log tells them
// apart (each process's run begins with "creating instance", and its
// lines name the sessions it runs), so each session gets its own; a run
// whose process is gone ends its session at once (a bridge started after
// that TUI quit); a TUI started just after another one's first line (its
// own still to come) is not that other one's, and a TUI of another
// directory started between a process's start and its first line does not
// make that process another run's.
func TestProcessBindingByLog(t *testing.T) {
	home := t.TempDir()
	w := openWriter(t, filepath.Join(home, "opencode.db"))
	for _, q := range oldSchema {
		w.exec(q)
	}
	now := time.Now()
	tree := proctest.Fake(t)
	for pid, ago := range map[int]time.Duration{20: 10 * time.Minute, 21: 8 * time.Minute} {
		tree.Add(proctest.Proc{PID: pid, PPID: 1, Exe: "/usr/bin/opencode", Cwd: "/srv/x", Started: now.Add(-ago)})
	}
	// Two TUIs in /srv/y as the live suite starts them on a busy machine:
	// each writes its first line 2.3 s after it starts, the second starts
	// 4 s after the first, so 1.7 s after the first one's first line.
	y := now.Add(-3 * time.Minute)
	tree.Add(proctest.Proc{PID: 30, PPID: 1, Exe: "/usr/bin/opencode", Cwd: "/srv/y", Started: y})
	tree.Add(proctest.Proc{PID: 31, PPID: 1, Exe: "/usr/bin/opencode", Cwd: "/srv/y", Started: y.Add(4 * time.Second)})
	logLine := func(at time.Time, run, rest string) string {
		return "timestamp=" + at.UTC().Format("2006-01-02T15:04:05.000Z") + " level=INFO run=" + run + " " + rest + "\n"
	}
	sourcestest.Append(t, filepath.Join(home, "log", "opencode.log"),
		logLine(now.Add(-10*time.Minute+time.Second), "r50", `message="creating instance" directory=/srv/other`)+ // elsewhere, between 20's start and its first line
			logLine(now.Add(-10*time.Minute+2*time.Second), "r20", `message="creating instance" directory=/srv/x`)+
			logLine(now.Add(-8*time.Minute+2*time.Second), "r21", `message="creating instance" directory=/srv/x`)+
			logLine(now.Add(-6*time.Minute+1*time.Second), "r99", `message="creating instance" directory=/srv/x`)+ // a TUI that quit
			logLine(now.Add(-5*time.Minute), "r21", "message=loop session.id=ses_one step=0")+
			logLine(now.Add(-4*time.Minute), "r20", "message=loop session.id=ses_two step=0")+
			logLine(now.Add(-3*time.Minute), "r99", "message=loop session.id=ses_gone step=0")+
			logLine(y.Add(2300*time.Millisecond), "r30", `message="creating instance" directory=/srv/y`)+
			logLine(y.Add(6300*time.Millisecond), "r31", `message="creating instance" directory=/srv/y`)+
			logLine(y.Add(10*time.Second), "r30", "message=loop session.id=ses_three step=0")+
			logLine(y.Add(20*time.Second), "r31", "message=loop session.id=ses_four step=0"))
	for _, id := range []string{"ses_one", "ses_two", "ses_gone", "ses_three", "ses_four"} {
		dir := "/srv/x"
		if id == "ses_three" || id == "ses_four" {
			dir = "/srv/y"
		}
		w.exec("INSERT INTO session (id, project_id, directory, title, time_created, time_updated) VALUES (?, 'p', ?, 't', ?, ?)",
			id, dir, now.Add(-5*time.Minute).UnixMilli(), now.Add(-time.Minute).UnixMilli())
	}
	h := sourcestest.Start(t, New(sources.Options{Home: home, Linger: -1, Processes: tree}), nil)
	is := sourcestest.StatusPID
	h.WaitFor(t, "ses_one on the process of its run", is("ses_one", agentbridge.StatusIdle, 21))
	h.WaitFor(t, "ses_two on the process of its run", is("ses_two", agentbridge.StatusIdle, 20))
	h.WaitFor(t, "ses_gone ended: its run's process is gone", is("ses_gone", sourcestest.StatusExited, 0))
	h.WaitFor(t, "ses_three on the first TUI, not the one started just after its first line", is("ses_three", agentbridge.StatusIdle, 30))
	h.WaitFor(t, "ses_four on the second TUI", is("ses_four", agentbridge.StatusIdle, 31))
}

// TestProcessBindingSimultaneous: two opencode TUIs started in one
// directory at nearly the same moment, both before either one's log run
// begins: the runs go to the processes in the order they started, so
// each session gets its own process (not both the later one), whichever
// session the log names first, and the first TUI's quit ends its session
// only. An opencode of another directory started between them, and one
// in the directory started after both first lines (an old pid used
// again), are neither session's.
func TestProcessBindingSimultaneous(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  string // the session the log names first
		second string
	}{
		{"first run's session named first", "ses_p1", "ses_p2"},
		{"second run's session named first", "ses_p2", "ses_p1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			w := openWriter(t, filepath.Join(home, "opencode.db"))
			for _, q := range oldSchema {
				w.exec(q)
			}
			t0 := time.Now().Add(-time.Minute)
			tree := proctest.Fake(t)
			add := func(pid int, cwd string, started time.Time) {
				tree.Add(proctest.Proc{PID: pid, PPID: 1, Exe: "/usr/bin/opencode", Cwd: cwd, Started: started})
			}
			add(40, "/srv/p", t0)
			add(42, "/srv/elsewhere", t0.Add(200*time.Millisecond))
			add(41, "/srv/p", t0.Add(400*time.Millisecond))
			add(35, "/srv/p", t0.Add(10*time.Second)) // after both first lines
			logLine := func(at time.Time, run, rest string) string {
				return "timestamp=" + at.UTC().Format("2006-01-02T15:04:05.000Z") + " level=INFO run=" + run + " " + rest + "\n"
			}
			runOf := map[string]string{"ses_p1": "rA", "ses_p2": "rB"}
			sourcestest.Append(t, filepath.Join(home, "log", "opencode.log"),
				logLine(t0.Add(2*time.Second), "rA", `message="creating instance" directory=/srv/p`)+
					logLine(t0.Add(2100*time.Millisecond), "rB", `message="creating instance" directory=/srv/p`)+
					logLine(t0.Add(20*time.Second), runOf[tc.first], "message=loop session.id="+tc.first+" step=0")+
					logLine(t0.Add(21*time.Second), runOf[tc.second], "message=loop session.id="+tc.second+" step=0"))
			for _, id := range []string{tc.first, tc.second} {
				w.exec("INSERT INTO session (id, project_id, directory, title, time_created, time_updated) VALUES (?, 'p', '/srv/p', 't', ?, ?)",
					id, t0.Add(15*time.Second).UnixMilli(), t0.Add(30*time.Second).UnixMilli())
			}
			h := sourcestest.Start(t, New(sources.Options{Home: home, Linger: -1, Processes: tree}), nil)
			is := sourcestest.StatusPID
			h.WaitFor(t, "ses_p1 on the first TUI", is("ses_p1", agentbridge.StatusIdle, 40))
			h.WaitFor(t, "ses_p2 on the second TUI", is("ses_p2", agentbridge.StatusIdle, 41))
			tree.Kill(40)
			h.WaitFor(t, "ses_p1 ended with the first TUI", is("ses_p1", sourcestest.StatusExited, 40))
			if s, _ := h.Snapshot("ses_p2"); s.PID != 41 || s.Status != agentbridge.StatusIdle {
				t.Errorf("ses_p2 %+v after the first TUI quit; want idle on 41", s)
			}
			if tree.Watched(42) || tree.Watched(35) {
				t.Error("a process of another directory or one started after the runs began was taken")
			}
		})
	}
}
