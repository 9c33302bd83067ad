package sources

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkTailerAppend measures the steady state of a followed journal:
// one ~300 B record appended, then the tailer's read of that change (open,
// fstat, read(2), delivery), as Run does on each file event. It runs the
// tailer with the in-place rewrite check (each read starts 4 KiB before
// the offset and hashes those bytes) against the same tailer without it,
// in the same run, alternating change by change. Reported: checked-ns/op,
// unchecked-ns/op and x-unchecked (checked time / unchecked time; near 1
// means the check costs little next to the open and read it rides on).
func BenchmarkTailerAppend(b *testing.B) {
	line := []byte(`{"type":"assistant","uuid":"0123456789abcdef","message":{"content":[{"type":"text","text":"` + string(make300()) + `"}]}}` + "\n")
	dir := b.TempDir()
	mk := func(name string, nocheck bool) (*Tailer, *file, string, *os.File) {
		p := filepath.Join(dir, name)
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		// Start with 1 MiB of journal, as a session some turns in.
		for range (1 << 20) / len(line) {
			w.Write(line)
		}
		tl, f := byHand(TailConfig{Roots: []string{dir}}, &countHandler{}, p)
		tl.nocheck = nocheck
		tl.read(p, f)
		return tl, f, p, w
	}
	checked, cf, cp, cw := mk("checked.jsonl", false)
	plain, pf, pp, pw := mk("plain.jsonl", true)
	defer cw.Close()
	defer pw.Close()
	var checkedT, plainT time.Duration
	for b.Loop() {
		cw.Write(line)
		t0 := time.Now()
		checked.read(cp, cf)
		checkedT += time.Since(t0)

		pw.Write(line)
		t0 = time.Now()
		plain.read(pp, pf)
		plainT += time.Since(t0)
	}
	if checked.rewrites.Load() != 0 {
		b.Fatalf("an append counted as a rewrite")
	}
	ch, ph := checked.h.(*countHandler), plain.h.(*countHandler)
	if ch.lines != ph.lines {
		b.Fatalf("checked delivered %d lines, unchecked %d", ch.lines, ph.lines)
	}
	n := float64(b.N)
	b.ReportMetric(float64(checkedT.Nanoseconds())/n, "checked-ns/op")
	b.ReportMetric(float64(plainT.Nanoseconds())/n, "unchecked-ns/op")
	b.ReportMetric(checkedT.Seconds()/plainT.Seconds(), "x-unchecked")
}

func make300() []byte {
	b := make([]byte, 300)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}
