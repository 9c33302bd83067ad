package client_test

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/agentbridge/agentbridge/client"
)

// BenchmarkReader decodes a stream of lifecycle records as the bridge
// sends them: it should cost no allocation per event beyond the id.
func BenchmarkReader(b *testing.B) {
	const data = `{"source":"claude-code","sessionId":"0f8c3a52-5b7e-4d0e-9a57-3c5a0e1b2d44","event":{"kind":"tool.started","toolId":"toolu_01","name":"Bash"}}`
	for _, f := range []client.Format{client.SSE, client.NDJSON} {
		var stream bytes.Buffer
		for i := 1; i <= 1000; i++ {
			if f == client.SSE {
				stream.WriteString("id: " + strconv.Itoa(i) + "\nevent: lifecycle\ndata: " + data + "\n\n")
			} else {
				stream.WriteString(`{"id":` + strconv.Itoa(i) + `,"event":"lifecycle","data":` + data + "}\n")
			}
		}
		b.Run(f.String(), func(b *testing.B) {
			b.SetBytes(int64(stream.Len()))
			b.ReportAllocs()
			for b.Loop() {
				r := client.NewReader(bytes.NewReader(stream.Bytes()), f, 0)
				for {
					if _, err := r.Next(); err != nil {
						if !errors.Is(err, io.EOF) {
							b.Fatal(err)
						}
						break
					}
				}
			}
		})
	}
}
