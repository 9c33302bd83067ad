package sources

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// scanDone is a countHandler that signals each ScanDone.
type scanDone struct {
	countHandler
	done chan struct{}
}

func (s *scanDone) ScanDone() { s.done <- struct{}{} }

// BenchmarkColdStart measures a tailer's start over thousands of old
// journals (spread over directories, as agents keep them) against the cost
// of listing them (ReadDir plus an lstat per file, what `ls -lR` does),
// measured in the same run. Old journals are only stat'ed, so the ratio
// x-listing should stay near 1 (watch setup is the difference).
func BenchmarkColdStart(b *testing.B) {
	const dirs, perDir = 50, 60 // 3,000 journals
	root := b.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("project-%02d", d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range perDir {
			p := filepath.Join(dir, fmt.Sprintf("session-%03d.jsonl", f))
			if err := os.WriteFile(p, []byte(`{"type":"session"}`+"\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.Chtimes(p, old, old); err != nil {
				b.Fatal(err)
			}
		}
	}
	var tailT, listT time.Duration
	for b.Loop() {
		start := time.Now()
		n := listTree(b, root)
		listT += time.Since(start)
		if n != dirs*perDir {
			b.Fatalf("listed %d files", n)
		}

		h := &scanDone{done: make(chan struct{}, 1)}
		tl := NewTailer(TailConfig{Roots: []string{root}}, h)
		ctx, cancel := context.WithCancel(context.Background())
		ended := make(chan struct{})
		start = time.Now()
		go func() { tl.Run(ctx); close(ended) }()
		<-h.done
		tailT += time.Since(start)
		cancel()
		<-ended
		if tl.Opens() != 0 {
			b.Fatalf("the tailer opened %d old journals", tl.Opens())
		}
	}
	b.ReportMetric(float64(tailT.Microseconds())/float64(b.N), "tailer-µs/start")
	b.ReportMetric(float64(listT.Microseconds())/float64(b.N), "listing-µs")
	b.ReportMetric(float64(tailT)/float64(listT), "x-listing")
}

func listTree(b *testing.B, dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			n += listTree(b, filepath.Join(dir, e.Name()))
			continue
		}
		if _, err := e.Info(); err == nil {
			n++
		}
	}
	return n
}
