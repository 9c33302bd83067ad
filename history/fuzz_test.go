package history

import (
	"math"
	"testing"
)

// FuzzDecodePrices: whatever the input, DecodePrices never panics, and a
// list it takes is valid: every model named, every price finite and ≥ 0,
// and it builds a lookup.
func FuzzDecodePrices(f *testing.F) {
	for _, seed := range []string{
		`[{"model":"claude-sonnet-4*","input":3,"output":15,"cacheRead":0.3,"cacheWrite":3.75}]`,
		`[{"model":"a"},{"model":"b*"}]`,
		`[{"model":"","input":1}]`,
		`[{"model":"a","input":-0.0}]`,
		`[{"model":"a","input":1e308,"output":-1e-300}]`,
		`[{"model":"*"}]`,
		`[{"model":"a**"}]`,
		`null`,
		`[null]`,
		`[{"model":"a","input":"1"}]`,
		`[{"model":"\u0000"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := DecodePrices(data)
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.Model == "" {
				t.Fatalf("taken: an empty model in %s", data)
			}
			for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("taken: price %v in %s", v, data)
				}
			}
		}
		if _, err := newPrices(ps); err != nil {
			t.Fatalf("DecodePrices took %s, newPrices refused it: %v", data, err)
		}
	})
}
