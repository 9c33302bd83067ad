package sources

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hub"
)

func TestRegisterRefusesMistakes(t *testing.T) {
	mk := func(id string, harnesses ...string) Registration {
		r := Registration{Info: agentbridge.SourceInfo{ID: id}, New: func(Options) hub.Source { return nil }}
		for _, h := range harnesses {
			r.Info.Harnesses = append(r.Info.Harnesses, agentbridge.Harness{ID: h, DisplayName: h})
		}
		return r
	}
	noNew := mk("test-no-new", "h")
	noNew.New = nil
	for name, r := range map[string]Registration{
		"bad id":         mk("Bad_ID", "h"),
		"no harness":     mk("test-none"),
		"bad harness id": mk("test-bad-harness", "H!"),
		"no constructor": noNew,
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			Register(r)
		})
	}
	Register(mk("test-twice", "h"))
	defer func() {
		regMu.Lock()
		delete(regs, "test-twice")
		regMu.Unlock()
		if recover() == nil {
			t.Error("a second registration of one id did not panic")
		}
	}()
	Register(mk("test-twice", "h"))
}

func TestResolveHome(t *testing.T) {
	env := map[string]string{"HOME": "/home/u", "AGENT_HOME": "/srv/agent", "REL_HOME": "rel/dir"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		name       string
		r          Registration
		configured string
		want       string
	}{
		{"configured wins", Registration{HomeEnv: "AGENT_HOME", DefaultHome: HomeUnder(".agent")}, "/etc/x", "/etc/x"},
		{"agent's variable", Registration{HomeEnv: "AGENT_HOME", DefaultHome: HomeUnder(".agent")}, "", "/srv/agent"},
		{"relative variable ignored", Registration{HomeEnv: "REL_HOME", DefaultHome: HomeUnder(".agent")}, "", "/home/u/.agent"},
		{"default", Registration{HomeEnv: "UNSET", DefaultHome: HomeUnder(".local", "share", "agent")}, "", "/home/u/.local/share/agent"},
		{"optional needs a name", Registration{HomeEnv: "UNSET", Optional: true, DefaultHome: HomeUnder(".agent")}, "", ""},
		{"optional named", Registration{HomeEnv: "AGENT_HOME", Optional: true}, "", "/srv/agent"},
		{"no default", Registration{}, "", ""},
	} {
		if got := tc.r.ResolveHome(tc.configured, getenv); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestReadSmall(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(`{"pid":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse.json")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		path string
		want error
		data string
	}{
		{small, nil, `{"pid":1}`},
		{link, nil, `{"pid":1}`},
		{sparse, ErrTooLarge, ""},
		{fifo, ErrNotRegular, ""}, // must not block: no writer ever comes
		{zero, ErrNotRegular, ""},
		{dir, ErrNotRegular, ""},
		{filepath.Join(dir, "missing"), os.ErrNotExist, ""},
	} {
		done := make(chan struct{})
		var data []byte
		var err error
		go func() { defer close(done); data, err = ReadSmall(tc.path, LimitSidecar) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("ReadSmall(%s) blocked", filepath.Base(tc.path))
		}
		if tc.want == nil && (err != nil || string(data) != tc.data) {
			t.Errorf("ReadSmall(%s) = %q, %v", filepath.Base(tc.path), data, err)
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("ReadSmall(%s) error %v, want %v", filepath.Base(tc.path), err, tc.want)
		}
	}
}

// A hook vocabulary is the source's own: it names one of the source's
// harnesses and at least one event; the registry finds it by source and
// by harness.
func TestRegisterHooks(t *testing.T) {
	mk := func(id string, hooks *Hooks) Registration {
		return Registration{
			Info:  agentbridge.SourceInfo{ID: id, Harnesses: []agentbridge.Harness{{ID: id + "-cli", DisplayName: id}}},
			New:   func(Options) hub.Source { return nil },
			Hooks: hooks,
		}
	}
	events := map[string]fold.HookKind{"Stop": fold.HookTurnEnd}
	for name, r := range map[string]Registration{
		"another harness": mk("test-hooks-other", &Hooks{Harness: "elsewhere", Events: events}),
		"no events":       mk("test-hooks-empty", &Hooks{Harness: "test-hooks-empty-cli"}),
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			Register(r)
		})
	}
	Register(mk("test-hooks", &Hooks{Harness: "test-hooks-cli", Events: events}))
	Register(mk("test-no-hooks", nil))
	defer func() {
		regMu.Lock()
		delete(regs, "test-hooks")
		delete(regs, "test-no-hooks")
		regMu.Unlock()
	}()
	if h, ok := LookupHooks("test-hooks"); !ok || h.Events["Stop"] != fold.HookTurnEnd {
		t.Errorf("LookupHooks(test-hooks) = %v, %v", h, ok)
	}
	if _, ok := LookupHooks("test-no-hooks"); ok {
		t.Error("a source without hooks has hooks")
	}
	if r, ok := HooksOfHarness("test-hooks-cli"); !ok || r.Info.ID != "test-hooks" {
		t.Errorf("HooksOfHarness(test-hooks-cli) = %q, %v", r.Info.ID, ok)
	}
	if _, ok := HooksOfHarness("test-no-hooks-cli"); ok {
		t.Error("a harness without hooks has hooks")
	}
}
