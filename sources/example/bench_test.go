package example

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
)

// BenchmarkAppendToStream measures the latency from appending a record to
// a journal to its lifecycle record arriving on a hub subscription (the
// stream, minus HTTP), p50 and p99, next to a bare fsnotify reader (one
// watch, read to EOF on each write event, find the newline) measured in
// the same run, with the appends of the two interleaved.
func BenchmarkAppendToStream(b *testing.B) {
	home := b.TempDir()
	dir := SessionsDir(home)
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	journal := filepath.Join(dir, "bench.jsonl")
	writeAll(b, journal, `{"type":"session","title":"bench"}`+"\n"+`{"type":"prompt","turnId":"t1"}`+"\n")

	h := hub.New(hub.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := h.Add(New(Config{Home: home})); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hubDone := make(chan error, 1)
	go func() { hubDone <- h.Run(ctx) }()
	defer func() { cancel(); <-hubDone }()
	sub := h.Subscribe(0, false, agentbridge.Filter{})
	defer sub.Close()
	// Wait until the scan's reset holds the session.
	waitRecord(b, sub, func(r hub.Record) bool {
		return r.Name == agentbridge.RecordReset && bytes.Contains(r.Data, []byte("bench"))
	})

	bare := newBareReader(b)
	defer bare.close()

	f, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()

	// Each iteration takes 50 samples of each, so that the percentiles
	// mean something even at make bench's -benchtime=2x.
	const samples = 50
	var ours, base []time.Duration
	i := 0
	for b.Loop() {
		for range samples {
			i++
			line := fmt.Sprintf(`{"type":"tool_started","toolId":"c%d","name":"Bash"}`+"\n", i)
			start := time.Now()
			if _, err := f.WriteString(line); err != nil {
				b.Fatal(err)
			}
			waitRecord(b, sub, lifecycle("tool.started"))
			ours = append(ours, time.Since(start))
			// Finish the tool, untimed: a session holds at most
			// fold.MaxOpenTools open, and the tool.started past them is
			// rejected (a diagnostic, no lifecycle record).
			if _, err := fmt.Fprintf(f, `{"type":"tool_finished","toolId":"c%d"}`+"\n", i); err != nil {
				b.Fatal(err)
			}
			waitRecord(b, sub, lifecycle("tool.finished"))

			base = append(base, bare.roundTrip(b, line))
		}
	}
	p := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds())
	}
	b.ReportMetric(p(ours, 0.50), "stream-p50-µs")
	b.ReportMetric(p(ours, 0.99), "stream-p99-µs")
	b.ReportMetric(p(base, 0.50), "bare-p50-µs")
	b.ReportMetric(p(base, 0.99), "bare-p99-µs")
	b.ReportMetric(p(ours, 0.50)/max(p(base, 0.50), 1), "x-bare-p50")
}

// lifecycle matches the lifecycle record of an event of the given kind.
func lifecycle(kind string) func(hub.Record) bool {
	k := []byte(`"kind":"` + kind + `"`)
	return func(r hub.Record) bool { return r.Name == agentbridge.RecordLifecycle && bytes.Contains(r.Data, k) }
}

func waitRecord(b *testing.B, sub *hub.Subscription, ok func(hub.Record) bool) {
	b.Helper()
	timeout := time.After(10 * time.Second)
	for _, r := range sub.Initial {
		if ok(r) {
			return
		}
	}
	for {
		select {
		case r := <-sub.C:
			if ok(r) {
				return
			}
		case <-timeout:
			b.Fatal("no record within 10s")
		}
	}
}

// bareReader is the baseline: the least a reader built on fsnotify does.
type bareReader struct {
	w    *fsnotify.Watcher
	f    *os.File // the journal, for appending
	got  chan struct{}
	done chan struct{}
}

func newBareReader(b *testing.B) *bareReader {
	dir := b.TempDir()
	p := filepath.Join(dir, "bare.jsonl")
	writeAll(b, p, "")
	w, err := fsnotify.NewWatcher()
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Add(dir); err != nil {
		b.Fatal(err)
	}
	r, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	br := &bareReader{w: w, f: f, got: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(br.done)
		defer r.Close()
		buf := make([]byte, 64<<10)
		for ev := range w.Events {
			if !ev.Has(fsnotify.Write) {
				continue
			}
			for {
				n, err := r.Read(buf)
				if n > 0 && bytes.IndexByte(buf[:n], '\n') >= 0 {
					br.got <- struct{}{}
				}
				if err != nil || n == 0 {
					break
				}
			}
		}
	}()
	return br
}

func (br *bareReader) roundTrip(b *testing.B, line string) time.Duration {
	start := time.Now()
	if _, err := br.f.WriteString(line); err != nil {
		b.Fatal(err)
	}
	select {
	case <-br.got:
	case <-time.After(10 * time.Second):
		b.Fatal("bare reader: no line within 10s")
	}
	return time.Since(start)
}

func (br *bareReader) close() {
	br.w.Close()
	<-br.done
	br.f.Close()
}

func writeAll(b *testing.B, path, s string) {
	b.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
}

// discard is a hub.Publisher that drops everything.
type discard struct{}

func (discard) Reset([]*fold.Session) error                   { return nil }
func (discard) Upsert(*fold.Session) error                    { return nil }
func (discard) Event(string, string, agentbridge.Event) error { return nil }
func (discard) Remove(string) error                           { return nil }
func (discard) Diagnostic(agentbridge.Diagnostic) error       { return nil }
func (discard) Fold(string, string, agentbridge.Event) error  { return nil }
func (discard) Flush()                                        {}
func (discard) Session(string) *fold.Session                  { return nil }
func (discard) Rescan()                                       {}
func (discard) Restart(string)                                {}
func (discard) Hide(string)                                   {}
func (discard) Show([]string)                                 {}

// BenchmarkIngest measures reading a large journal at start (tailer, the
// source's mapping and the fold) against a plain line-by-line
// encoding/json decode of the same file (bufio.Scanner plus json.Unmarshal
// into a map), measured in the same run. x-baseline is how many times
// faster the source is.
func BenchmarkIngest(b *testing.B) {
	home := b.TempDir()
	dir := SessionsDir(home)
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	journal := filepath.Join(dir, "big.jsonl")
	// Lines shaped like real agent journals: tool output and assistant
	// text make most of the bytes, and the source needs none of them.
	output := strings.Repeat(`ok  \tgithub.com/example/pkg/sub\t0.123s\n`, 50) // ~2 KB
	message := strings.Repeat("I will now look at the failing test and fix it. ", 20)
	var buf bytes.Buffer
	buf.WriteString(`{"type":"session","ts":"2026-11-30T09:00:00.000Z","title":"Big","model":"m","cwd":"/work/x"}` + "\n")
	for t := range 1000 {
		fmt.Fprintf(&buf, `{"type":"prompt","ts":"2026-11-30T09:00:01.000Z","turnId":"t%d","text":"Please do the thing number %d carefully and report back. %s"}`+"\n", t, t, message[:200])
		for c := range 5 {
			fmt.Fprintf(&buf, `{"type":"message","ts":"2026-11-30T09:00:01.500Z","role":"assistant","text":%q}`+"\n", message)
			fmt.Fprintf(&buf, `{"type":"tool_started","ts":"2026-11-30T09:00:02.000Z","toolId":"c%d-%d","name":"Bash","input":{"command":"go test ./... -run TestSomething -count=1","timeout":120000}}`+"\n", t, c)
			fmt.Fprintf(&buf, `{"type":"tool_finished","ts":"2026-11-30T09:00:03.000Z","toolId":"c%d-%d","ok":true,"output":"%s"}`+"\n", t, c, output)
		}
		fmt.Fprintf(&buf, `{"type":"usage","ts":"2026-11-30T09:00:04.000Z","inputTokens":18211,"outputTokens":904}`+"\n")
		fmt.Fprintf(&buf, `{"type":"complete","ts":"2026-11-30T09:00:05.000Z","ok":true,"summary":"Did thing %d."}`+"\n", t)
	}
	writeAll(b, journal, buf.String())
	size := int64(buf.Len())

	var srcT, baseT time.Duration
	for b.Loop() {
		start := time.Now()
		baselineDecode(b, journal)
		baseT += time.Since(start)

		start = time.Now()
		ingestOnce(b, home)
		srcT += time.Since(start)
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(srcT), "source-MB/s")
	b.ReportMetric(mbps(baseT), "baseline-MB/s")
	b.ReportMetric(float64(baseT)/float64(srcT), "x-baseline")
}

func baselineDecode(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	n := 0
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if n == 0 {
		b.Fatal("nothing decoded")
	}
}

// scanWaiter wraps the source's handler to signal the end of the scan.
type scanWaiter struct {
	sources.Handler
	done chan struct{}
}

func (s scanWaiter) ScanDone() { s.Handler.ScanDone(); s.done <- struct{}{} }

func ingestOnce(b *testing.B, home string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		sources.Follow(ctx, hub.Start{Enabled: []string{Harness}, Publisher: discard{}}, sources.FollowConfig{
			Tail: sources.TailConfig{Roots: []string{SessionsDir(home)}, Match: isJournal},
		}, func(ss *sources.Sessions) sources.Handler { return scanWaiter{&handler{Sessions: ss}, done} })
	}()
	<-done
	cancel()
	<-ended
}
