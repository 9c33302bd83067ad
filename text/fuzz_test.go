package text

import (
	"math"
	"testing"
)

// Seed corpora live in testdata/fuzz/<Name>/; plain go test runs them.

func FuzzBound(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, max int) {
		if got := Bound(s, math.MaxInt); got != Bound(s, len(s)+1) {
			t.Fatalf("Bound(%q, MaxInt) = %q, want no cut", s, got)
		}
		if got := Bound(s, math.MinInt); got != "" {
			t.Fatalf("Bound(%q, MinInt) = %q, want empty", s, got)
		}
		max = max%1100 - 50 // keep max small, negatives included
		checkBounded(t, s, max, Bound(s, max))
	})
}
