package claudecode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// Bounds of TestHostileHome: what every attack in place at once may cost.
const (
	hostileHeap = 32 << 20 // heap growth
	hostileRSS  = 64 << 20 // VmRSS growth
	hostileStop = 2 * time.Second
)

// plantAttacks puts, under the registry directory and a session's
// subagents directory, every hostile side file a writer of ~/.claude can
// make: a link to /dev/zero, a FIFO and a sparse 4 GiB file as registry
// files, and a link to /dev/zero and a FIFO as subagent sidecars (with
// their transcripts). n makes the names unique.
func plantAttacks(t *testing.T, dir, sid string, n int) {
	t.Helper()
	reg := filepath.Join(dir, "sessions")
	sub := filepath.Join(dir, "projects", "-work-proj", sid, "subagents")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	pid := func(k int) string { return filepath.Join(reg, strconv.Itoa(4000000+10*n+k)+".json") }
	must(os.Symlink("/dev/zero", pid(1)))
	must(syscall.Mkfifo(pid(2), 0o644))
	f, err := os.Create(pid(3))
	must(err)
	must(f.Truncate(4 << 30))
	must(f.Close())
	for k, plant := range []func(string) error{
		func(p string) error { return os.Symlink("/dev/zero", p) },
		func(p string) error { return syscall.Mkfifo(p, 0o644) },
	} {
		agent := fmt.Sprintf("agent-h%d%d", n, k)
		must(plant(filepath.Join(sub, agent+".meta.json")))
		must(os.WriteFile(filepath.Join(sub, agent+".jsonl"),
			[]byte(rec(sid, 10+k, "user", `"isSidechain":true,"agentId":"h","message":{"role":"user","content":"sub"}`)+"\n"), 0o644))
	}
}

func vmRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(string(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestHostileHome: with every hostile side file in place at start, and as
// many planted again while the source runs, the source reads none of them
// (a typed diagnostic, no path), keeps reporting and binding sessions —
// registry changes after a FIFO registry file are still seen — stays
// within a few MiB of memory, and stops at once.
func TestHostileHome(t *testing.T) {
	dir := t.TempDir()
	const sid = "7c7c7c7c-0000-4000-8000-000000000001"
	const sid2 = "7c7c7c7c-0000-4000-8000-000000000002"
	tr := func(id string) string { return filepath.Join(dir, "projects", "-work-proj", id+".jsonl") }
	regFile := func(pid int, id string) {
		t.Helper()
		b := fmt.Sprintf(`{"pid":%d,"sessionId":%q,"cwd":"/work/proj","startedAt":%d,"status":"busy"}`, pid, id, time.Now().Add(-time.Second).UnixMilli())
		if err := os.WriteFile(filepath.Join(dir, "sessions", fmt.Sprintf("%d.json", pid)), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	plantAttacks(t, dir, sid, 0)
	p1 := helper(t)
	regFile(p1.Process.Pid, sid)
	if err := os.WriteFile(tr(sid), []byte(prompt(sid, 1, "p", "hello")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	heap0, rss0 := heap(), vmRSS(t)
	h := sourcestest.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- New(Options{ConfigDir: dir}).Run(ctx, hub.Start{Enabled: []string{Harness}, Publisher: h})
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cancel()
			<-done
		}
	})
	bound := func(id string, pid int) func(*sourcestest.Hub) bool {
		return func(h *sourcestest.Hub) bool {
			s, ok := h.Snapshot(id)
			return ok && s.PID == pid && s.Status == agentbridge.StatusRunning
		}
	}
	h.WaitFor(t, "the live session bound at start", bound(sid, p1.Process.Pid))

	// As many again while it runs, then a new process and session: seen.
	plantAttacks(t, dir, sid, 1)
	p2 := helper(t)
	if err := os.WriteFile(tr(sid2), []byte(prompt(sid2, 1, "p", "again")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	regFile(p2.Process.Pid, sid2)
	h.WaitFor(t, "a new process after the attacks", bound(sid2, p2.Process.Pid))
	// A registry change after the FIFO: the first process goes idle.
	if err := os.WriteFile(filepath.Join(dir, "sessions", fmt.Sprintf("%d.json", p1.Process.Pid)),
		[]byte(fmt.Sprintf(`{"pid":%d,"sessionId":%q,"status":"waiting","waitingFor":"approve Bash"}`, p1.Process.Pid, sid)), 0o644); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "a registry change after the attacks", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot(sid)
		return ok && s.Status == agentbridge.StatusWaiting
	})
	h.WaitFor(t, "typed diagnostics", func(h *sourcestest.Hub) bool {
		var regular, large bool
		for _, d := range h.Diagnostics() {
			regular = regular || d.Code == sources.CodeSideNotRegular
			large = large || d.Code == sources.CodeSideTooLarge
		}
		return regular && large
	})
	for _, d := range h.Diagnostics() {
		if strings.Contains(d.Message, dir) || strings.Contains(d.Message, "/dev/zero") {
			t.Errorf("diagnostic %q names a path", d.Message)
		}
	}
	heapGrew, rssGrew := int64(heap())-int64(heap0), vmRSS(t)-rss0
	t.Logf("with the attacks in place: heap %+d KiB, VmRSS %+d KiB", heapGrew>>10, rssGrew>>10)
	if heapGrew > hostileHeap {
		t.Errorf("heap grew by %d MiB with the attacks in place; want under %d MiB", heapGrew>>20, hostileHeap>>20)
	}
	if rssGrew > hostileRSS {
		t.Errorf("VmRSS grew by %d MiB with the attacks in place; want under %d MiB", rssGrew>>20, hostileRSS>>20)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Errorf("Run = %v", err)
		}
		t.Logf("Run returned %v after cancel", time.Since(start))
		if d := time.Since(start); d > hostileStop {
			t.Errorf("Run took %v to return after cancel", d)
		}
	case <-time.After(hostileStop):
		t.Fatalf("Run did not return within %v of cancel", hostileStop)
	}
}

// TestRegistryNamesAnotherProgram: a registry file naming a live process
// that is not Claude Code (planted, or left behind with its pid reused)
// binds nothing: the session is not shown under that pid, and the file
// is counted as invalid.
func TestRegistryNamesAnotherProgram(t *testing.T) {
	dir := t.TempDir()
	other := proctest.Start(t, exec.Command(proctest.Named(t, "vim"), "600"))
	const sid = "7c7c7c7c-0000-4000-8000-000000000003"
	for name, data := range map[string]string{
		filepath.Join("sessions", fmt.Sprintf("%d.json", other.Process.Pid)): fmt.Sprintf(`{"pid":%d,"sessionId":%q,"status":"busy"}`, other.Process.Pid, sid),
		filepath.Join("projects", "-work-proj", sid+".jsonl"): rec(sid, 1, "user",
			fmt.Sprintf(`"timestamp":%q,"message":{"role":"user","content":"hello"}`, time.Now().UTC().Format(time.RFC3339Nano))) + "\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := sourcestest.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- New(Options{ConfigDir: dir}).Run(ctx, hub.Start{Enabled: []string{Harness}, Publisher: h})
	}()
	t.Cleanup(func() { cancel(); <-done })
	h.WaitFor(t, "the registry file counted as invalid", func(h *sourcestest.Hub) bool {
		for _, d := range h.Diagnostics() {
			if d.Code == codeInvalidRegistry {
				return true
			}
		}
		return false
	})
	if s, ok := h.Snapshot(sid); !ok || s.PID == other.Process.Pid || s.Status != agentbridge.StatusExited {
		t.Errorf("session %+v (found %v): want it exited, not bound to the other program", s, ok)
	}
}
