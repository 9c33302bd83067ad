package sources

import (
	"bytes"
	"slices"
	"testing"
	"unicode/utf8"
)

// lineHandler keeps the delivered lines.
type lineHandler struct {
	countHandler
	lines []string
}

func (l *lineHandler) Line(_ string, b []byte) { l.lines = append(l.lines, string(b)) }

// referenceLines is what the tailer must deliver for data, by definition:
// the complete lines, each without '\n' and one trailing '\r', skipping
// lines longer than max bytes, empty lines and lines that are not UTF-8.
func referenceLines(data []byte, max int) []string {
	var out []string
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return out
		}
		raw := data[:i]
		data = data[i+1:]
		if len(raw) > max {
			continue
		}
		raw = bytes.TrimSuffix(raw, []byte("\r"))
		if len(raw) == 0 || !utf8.Valid(raw) {
			continue
		}
		out = append(out, string(raw))
	}
}

// FuzzSplit: however a file's bytes arrive in pieces, the tailer delivers
// exactly the reference lines.
func FuzzSplit(f *testing.F) {
	f.Add([]byte("one\ntwo\n"), uint8(3), uint8(5))
	f.Add([]byte("{\"a\":1}\r\n\n\xff\xfe\nlast"), uint8(1), uint8(2))
	f.Add(bytes.Repeat([]byte("x"), 100), uint8(40), uint8(70))
	f.Add([]byte("short\n"+string(bytes.Repeat([]byte("y"), 80))+"\nafter\n"), uint8(7), uint8(33))
	f.Fuzz(func(t *testing.T, data []byte, a, b uint8) {
		const max = 64
		h := &lineHandler{}
		tl := NewTailer(TailConfig{MaxLine: max}, h)
		fl := &file{}
		// Feed data in up to three pieces cut at a and b.
		cuts := []int{int(a), int(b)}
		slices.Sort(cuts)
		prev := 0
		for _, c := range cuts {
			c = min(c, len(data))
			if c > prev {
				tl.split("p", fl, data[prev:c])
				prev = c
			}
		}
		tl.split("p", fl, data[prev:])
		want := referenceLines(data, max)
		if !slices.Equal(h.lines, want) {
			t.Fatalf("split(%q at %d,%d) = %q, want %q", data, a, b, h.lines, want)
		}
	})
}

var _ Handler = (*lineHandler)(nil)

// pathLines keeps the delivered lines per path.
type pathLines struct {
	countHandler
	lines map[string][]string
}

func (l *pathLines) Line(p string, b []byte) { l.lines[p] = append(l.lines[p], string(b)) }

// FuzzSplitHeld: two files whose pieces arrive interleaved share MaxHeld.
// The bytes held never exceed it and always equal the fragments' capacity;
// each file's delivered lines are its reference lines in order, some
// perhaps skipped (CodeHeldLimit), never altered or invented.
func FuzzSplitHeld(f *testing.F) {
	f.Add([]byte("one\ntwo\n"), []byte("x\ny"), uint8(3), uint8(1))
	f.Add(bytes.Repeat([]byte("a"), 60), bytes.Repeat([]byte("b"), 60), uint8(30), uint8(30))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nend\n"), []byte("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\nfin\n"), uint8(20), uint8(25))
	f.Fuzz(func(t *testing.T, a, b []byte, ca, cb uint8) {
		const max = 64
		h := &pathLines{lines: map[string][]string{}}
		tl := NewTailer(TailConfig{MaxLine: max, MaxHeld: max}, h)
		fa, fb := &file{}, &file{}
		tl.files = map[string]*file{"a": fa, "b": fb}
		pieces := func(d []byte, c uint8) [][]byte {
			k := min(int(c), len(d))
			return [][]byte{d[:k], d[k:]}
		}
		pa, pb := pieces(a, ca), pieces(b, cb)
		for i := range 2 {
			tl.split("a", fa, pa[i])
			tl.split("b", fb, pb[i])
			if tl.held > max || tl.held != cap(fa.part)+cap(fb.part) {
				t.Fatalf("held %d with fragments of capacity %d+%d, MaxHeld %d", tl.held, cap(fa.part), cap(fb.part), max)
			}
		}
		for p, d := range map[string][]byte{"a": a, "b": b} {
			want := referenceLines(d, max)
			got := h.lines[p]
			for _, l := range got {
				i := slices.Index(want, l)
				if i < 0 {
					t.Fatalf("%s: delivered %q, not a line of %q in order (want %q)", p, l, d, referenceLines(d, max))
				}
				want = want[i+1:]
			}
		}
	})
}
