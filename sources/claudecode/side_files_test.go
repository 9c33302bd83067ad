package claudecode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// Bounds of TestHostileHome: what the attacks in place may cost.
const (
	hostileHeap = 32 << 20    // heap growth
	hostileRSS  = 64 << 20    // VmRSS growth
	hostileStop = time.Minute // a Run that has not returned by then hangs
)

// attack plants one hostile side file, made unique by n, in a home whose
// live session is sid: the kind of file a writer of ~/.claude can make.
type attack struct {
	name  string
	code  string // the diagnostic it gives
	plant func(t *testing.T, dir, sid string, n int)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// registryAttack plants sessions/<pid>.json with make.
func registryAttack(name, code string, make func(p string) error) attack {
	return attack{name, code, func(t *testing.T, dir, _ string, n int) {
		t.Helper()
		must(t, make(filepath.Join(dir, "sessions", strconv.Itoa(4000000+n)+".json")))
	}}
}

// sidecarAttack plants a subagent transcript of sid whose .meta.json is
// made by make.
func sidecarAttack(name, code string, make func(p string) error) attack {
	return attack{name, code, func(t *testing.T, dir, sid string, n int) {
		t.Helper()
		sub := filepath.Join(dir, "projects", "-work-proj", sid, "subagents")
		must(t, os.MkdirAll(sub, 0o755))
		agent := fmt.Sprintf("agent-h%d", n)
		must(t, make(filepath.Join(sub, agent+metaSuffix)))
		must(t, os.WriteFile(filepath.Join(sub, agent+".jsonl"),
			[]byte(rec(sid, 10+n, "user", `"isSidechain":true,"agentId":"h","message":{"role":"user","content":"sub"}`)+"\n"), 0o644))
	}}
}

func linkToZero(p string) error { return os.Symlink("/dev/zero", p) }
func fifo(p string) error       { return syscall.Mkfifo(p, 0o644) }
func sparse4G(p string) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if err := f.Truncate(4 << 30); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var attacks = []attack{
	registryAttack("registry file linked to /dev/zero", sources.CodeSideNotRegular, linkToZero),
	registryAttack("registry file as a FIFO", sources.CodeSideNotRegular, fifo),
	registryAttack("sparse 4 GiB registry file", sources.CodeSideTooLarge, sparse4G),
	sidecarAttack("subagent sidecar linked to /dev/zero", sources.CodeSideNotRegular, linkToZero),
	sidecarAttack("subagent sidecar as a FIFO", sources.CodeSideNotRegular, fifo),
}

func vmRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		testenv.Missing(t, "no /proc/self/status: %v", err)
	}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(string(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	testenv.Missing(t, "no VmRSS")
	return 0
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestHostileHome: with each hostile side file (and then all of them at
// once) in place at start, and planted again while the source runs, the
// source reads none of them (a typed diagnostic, no path), keeps reporting
// and binding sessions — registry changes after a FIFO registry file are
// still seen — stays within a few MiB of memory, and stops at once.
func TestHostileHome(t *testing.T) {
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) { hostileHome(t, []attack{a}) })
	}
	t.Run("all at once", func(t *testing.T) { hostileHome(t, attacks) })
}

func hostileHome(t *testing.T, planted []attack) {
	plant := func(dir, sid string, n int) {
		t.Helper()
		for k, a := range planted {
			a.plant(t, dir, sid, 10*n+k)
		}
	}
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
	must(t, os.MkdirAll(filepath.Join(dir, "sessions"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "projects", "-work-proj"), 0o755))
	plant(dir, sid, 0)
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
		done <- New(Options{Home: dir}).Run(ctx, hub.Start{Enabled: []string{Harness}, Publisher: h})
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
			s, ok := h.Shown(id)
			return ok && s.PID == pid && s.Status == agentbridge.StatusRunning
		}
	}
	h.WaitFor(t, "the live session bound at start", bound(sid, p1.Process.Pid))

	// As many again while it runs, then a new process and session: seen.
	plant(dir, sid, 1)
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
		s, ok := h.Shown(sid)
		return ok && s.Status == agentbridge.StatusWaiting
	})
	h.WaitFor(t, "typed diagnostics", func(h *sourcestest.Hub) bool {
		for _, a := range planted {
			if !slices.ContainsFunc(h.Diagnostics(), func(d agentbridge.Diagnostic) bool { return d.Code == a.code }) {
				return false
			}
		}
		return true
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
		done <- New(Options{Home: dir}).Run(ctx, hub.Start{Enabled: []string{Harness}, Publisher: h})
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
	if s, ok := h.Shown(sid); !ok || s.PID == other.Process.Pid || s.Status != sourcestest.StatusExited {
		t.Errorf("session %+v (found %v): want it exited, not bound to the other program", s, ok)
	}
}
