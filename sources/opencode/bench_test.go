package opencode

import (
	"context"
	"testing"
)

// BenchmarkChanges measures one wake's read of a database whose journal
// has one new row (the common case while opencode streams): the target is
// well under a millisecond, so that a busy agent costs the bridge little.
func BenchmarkChanges(b *testing.B) {
	p := copyDB(b, tuiFixture)
	d, err := OpenDB(p)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if _, err := d.Scan(ctx, 0); err != nil {
		b.Fatal(err)
	}
	end := d.last
	b.ReportAllocs()
	for b.Loop() {
		d.last = end - 1
		recs, err := d.Changes(ctx)
		if err != nil || len(recs) != 1 {
			b.Fatalf("Changes = %d, %v", len(recs), err)
		}
	}
}

// BenchmarkMap measures the mapping of a whole journal the real CLI wrote.
func BenchmarkMap(b *testing.B) {
	d, err := OpenDB(copyDB(b, tuiFixture))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	recs, err := d.Changes(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m := NewMapper(nil)
		for _, r := range recs {
			m.Apply(r)
		}
	}
}
