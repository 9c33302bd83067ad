package sources_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources/claudecode"
	"github.com/agentbridge/agentbridge/sources/codex"
	"github.com/agentbridge/agentbridge/sources/example"
)

// recorded is one source with the journals recorded in its testdata, laid
// out as the agent writes them under its home.
type recorded struct {
	name    string
	harness string
	files   map[string][]byte // path below the home → content
	source  func(home string) hub.Source
	// scanRules: the source decides some things differently at a scan than
	// live (Codex: a rollout no process holds at a scan is exited; a
	// subagent's rollout may be read before or after its parent's), so
	// live it must show the same sessions as a start-up scan, and after a
	// rescan the same snapshots.
	scanRules bool
}

func recordings(t *testing.T) []recorded {
	t.Helper()
	load := func(glob string, place func(path string) string) map[string][]byte {
		paths, err := filepath.Glob(glob)
		if err != nil || len(paths) == 0 {
			t.Fatalf("no recordings at %s (%v)", glob, err)
		}
		out := map[string][]byte{}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[place(p)] = b
		}
		return out
	}
	return []recorded{
		{
			name: "example", harness: example.Harness,
			files: load("example/demo/testdata/journals/*.jsonl", func(p string) string {
				return filepath.Join("sessions", filepath.Base(p))
			}),
			source: func(home string) hub.Source { return example.New(example.Config{Home: home}) },
		},
		{
			name: "claudecode", harness: claudecode.Harness,
			files: load("claudecode/testdata/journals/*.jsonl", func(p string) string {
				// One project directory; the file name is the session id.
				return filepath.Join("projects", "-home-u-proj", filepath.Base(p))
			}),
			source: func(home string) hub.Source { return claudecode.New(claudecode.Options{Home: home}) },
		},
		{
			name: "codex", harness: codex.Harness,
			files: load("codex/testdata/rollouts/*/*.jsonl", func(p string) string {
				return filepath.Join("sessions", "2026", "11", "30", filepath.Base(filepath.Dir(p)), filepath.Base(p))
			}),
			source:    func(home string) hub.Source { return codex.New(codex.Options{Home: home}) },
			scanRules: true,
		},
	}
}

// bridge runs a hub with one source.
type bridge struct {
	h      *hub.Hub
	id     string
	cancel context.CancelFunc
	done   chan struct{}
	readAt int64 // when set, activity times equal to it are left out of state (withoutReadTimes)
}

// clock is a hub clock that moves on by a second at every reading, so
// that a stamp given twice would show.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func start(t *testing.T, src hub.Source, now func() time.Time) *bridge {
	t.Helper()
	h := hub.New(hub.Options{Now: now})
	if err := h.Add(src); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &bridge{h: h, id: src.Info().ID, cancel: cancel, done: make(chan struct{})}
	sub := h.Subscribe(0, false, agentbridge.Filter{})
	defer sub.Close()
	go func() { defer close(b.done); _ = h.Run(ctx) }()
	t.Cleanup(b.stop)
	// Ready: the source's first reset, after its scan.
	resets := 0
	deadline := time.After(20 * time.Second)
	for resets < 1 {
		select {
		case r := <-sub.C:
			if r.Name == agentbridge.RecordReset {
				resets++
			}
		case <-deadline:
			t.Fatal("the source sent no reset")
		}
	}
	return b
}

func (b *bridge) stop() {
	b.cancel()
	<-b.done
}

// state is GET /v1/sessions' items, encoded.
func (b *bridge) state(t *testing.T) []byte {
	t.Helper()
	_, list := b.h.Sessions(agentbridge.Filter{})
	if b.readAt != 0 {
		list = withoutReadTimes(list, b.readAt)
	}
	out, err := json.MarshalIndent(list, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withoutReadTimes leaves out of the entries the activity times that are
// at (the hub's fixed clock): the times the hub read undated records live
// (hub.Sink's read times), which a start-up scan has not, or stamped an
// agent.done with, which both have.
func withoutReadTimes(list []agentbridge.Entry, at int64) []agentbridge.Entry {
	out := make([]agentbridge.Entry, len(list))
	for i, e := range list {
		if a := e.Activity; a != nil {
			c := *a
			if c.StatusSince == at {
				c.StatusSince = 0
			}
			if c.TurnStartedAt == at {
				c.TurnStartedAt = 0
			}
			if c.Tool != nil && c.Tool.Since == at {
				tool := *c.Tool
				tool.Since = 0
				c.Tool = &tool
			}
			e.Activity = &c
			if c.IsZero() {
				e.Activity = nil
			}
		}
		out[i] = e
	}
	return out
}

// waitState waits until the bridge shows want.
func (b *bridge) waitState(t *testing.T, what string, want []byte) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := b.state(t)
		if bytes.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: snapshots differ (-want +got):\n%s", what, cmp.Diff(string(want), string(got)))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitIDs waits until the bridge shows the sessions of want (by id).
func (b *bridge) waitIDs(t *testing.T, want []byte) {
	t.Helper()
	ids := func(state []byte) []string {
		var list []agentbridge.Entry
		if err := json.Unmarshal(state, &list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range list {
			out = append(out, e.Snapshot.ID)
		}
		return out
	}
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Equal(ids(b.state(t)), ids(want)) {
		if time.Now().After(deadline) {
			t.Fatalf("live: sessions %v, want those of a start-up scan %v", ids(b.state(t)), ids(want))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func writeTree(t *testing.T, home string, files map[string][]byte) {
	t.Helper()
	for rel, b := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, home, files)
}

// settleAt is the one mtime of settle: recent, for sources that scan
// recent files only.
var settleAt = time.Now().Add(-time.Minute).Truncate(time.Second)

// settle gives every file one fixed modification time: a source that
// dates what a scan infers by a file's mtime (Codex: a rollout no process
// holds has exited when it was last written) then dates it alike however
// the file was written.
func settle(t *testing.T, home string, files map[string][]byte) {
	t.Helper()
	at := settleAt
	for rel := range files {
		if err := os.Chtimes(filepath.Join(home, rel), at, at); err != nil {
			t.Fatal(err)
		}
	}
}

// appendRandomly writes every file's content in chunks of random size
// (cutting lines anywhere), interleaving the files in random order unless
// one after another is asked for, and sometimes pausing, so that the
// source reads them in batches the seed decides.
func appendRandomly(t *testing.T, home string, files map[string][]byte, rng *rand.Rand, inOrder bool) {
	t.Helper()
	left := map[string][]byte{}
	var names []string
	for rel, b := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		left[p] = b
		names = append(names, p)
	}
	sort.Strings(names)
	for len(names) > 0 {
		i := 0
		if !inOrder {
			i = rng.IntN(len(names))
		}
		p := names[i]
		b := left[p]
		n := min(len(b), 1+rng.IntN(4096))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if left[p] = b[n:]; len(left[p]) == 0 {
			names = append(names[:i], names[i+1:]...)
		}
		if rng.IntN(8) == 0 {
			time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
		}
	}
}

// TestLiveEqualsRescan is the property that the hub owning every session
// guarantees: the snapshots after the recorded journals of each source are
// the same whether the bridge read them at a start-up scan, appended live
// in any batching (random chunks, lines cut anywhere, files interleaved),
// or read again after its harness was switched off and on. Compared are
// the bytes of GET /v1/sessions' items, without the activity times of
// undated records, which only a live read knows (withoutReadTimes).
func TestLiveEqualsRescan(t *testing.T) {
	t.Parallel()
	fixed := func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	for _, rec := range recordings(t) {
		t.Run(rec.name, func(t *testing.T) {
			t.Parallel()
			cold := t.TempDir()
			writeTree(t, cold, rec.files)
			b := start(t, rec.source(cold), fixed)
			b.readAt = fixed().UnixMilli()
			want := b.state(t)
			b.stop()
			if n := bytes.Count(want, []byte(`"snapshot"`)); n == 0 {
				t.Fatalf("the scan found no session in %d journals", len(rec.files))
			}
			for seed := range 3 {
				t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
					home := t.TempDir()
					b := start(t, rec.source(home), fixed)
					b.readAt = fixed().UnixMilli()
					appendRandomly(t, home, rec.files, rand.New(rand.NewPCG(uint64(seed), 12)), rec.scanRules)
					if rec.scanRules {
						b.waitIDs(t, want)
					} else {
						b.waitState(t, "live against a start-up scan", want)
					}

					if _, err := b.h.SetHarness(b.id, rec.harness, false); err != nil {
						t.Fatal(err)
					}
					b.waitState(t, "harness off", []byte("[]"))
					settle(t, home, rec.files)
					if _, err := b.h.SetHarness(b.id, rec.harness, true); err != nil {
						t.Fatal(err)
					}
					b.waitState(t, "harness on again (a rescan)", want)
				})
			}
		})
	}
}

// TestHarnessOffOnKeepsSnapshots: a session whose turn ended without a
// time of its own (agent.done without occurredAt: the hub stamps it) comes
// back byte for byte after its harness is switched off and on, though the
// hub's clock moved on and the journal was read again.
func TestHarnessOffOnKeepsSnapshots(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	b := start(t, example.New(example.Config{Home: home}), c.now)
	lines := strings.Join([]string{
		`{"type":"session","title":"Fix the build","cwd":"/w/app"}`,
		`{"type":"prompt","turnId":"t1","text":"fix it"}`,
		`{"type":"complete","ok":true}`,
		`{"type":"prompt","turnId":"t2","text":"and the docs"}`,
		`{"type":"complete","ok":true}`,
	}, "\n") + "\n"
	writeTree(t, home, map[string][]byte{"sessions/s1.jsonl": []byte(lines)})
	deadline := time.Now().Add(20 * time.Second)
	for !bytes.Contains(b.state(t), []byte("lastTurnEndedAt")) || bytes.Contains(b.state(t), []byte(`"running"`)) {
		if time.Now().After(deadline) {
			t.Fatalf("the session's turn did not end: %s", b.state(t))
		}
		time.Sleep(5 * time.Millisecond)
	}
	want := b.state(t)
	for i := range 2 {
		if _, err := b.h.SetHarness(b.id, example.Harness, false); err != nil {
			t.Fatal(err)
		}
		b.waitState(t, "harness off", []byte("[]"))
		if _, err := b.h.SetHarness(b.id, example.Harness, true); err != nil {
			t.Fatal(err)
		}
		b.waitState(t, fmt.Sprint("harness on again, time ", i+1), want)
	}
}
