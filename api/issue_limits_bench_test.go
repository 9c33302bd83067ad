package api

import (
	"testing"
)

// BenchmarkDecodeWrongBodies decodes the 1 MB publish bodies of wrongBodies (half a
// million bad elements and the like): what one authenticated request can
// cost the bridge. Reported per body kind: ns/op and B/op (allocated in
// all; most is garbage at once, the resident peak stays under 64 MiB, see
// TestIssueListsAreBounded). Target: each under 1 s and 512 MiB
// on a busy 2-core machine (measured: 0.03-0.5 s, 6-350 MB).
func BenchmarkDecodeWrongBodies(b *testing.B) {
	for name, body := range wrongBodies("/v1/sources/example-push/publish") {
		b.Run(name, func(b *testing.B) {
			raw := []byte(body.body)
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				_, _, c := decodeOps(raw, nil)
				if c.Len() == 0 {
					b.Fatal("no issues")
				}
			}
		})
	}
}
