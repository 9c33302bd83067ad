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
