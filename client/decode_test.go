package client_test

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/client"
)

func TestParseNDJSON(t *testing.T) {
	tests := []struct {
		line    string
		want    client.Event
		wantErr bool
	}{
		{`{"id":17,"event":"upsert","data":{"source":"codex","snapshot":{"id":"a"}}}`,
			client.Event{ID: 17, Name: "upsert", Data: []byte(`{"source":"codex","snapshot":{"id":"a"}}`)}, false},
		{`{"id":"18","event":"remove","data": {"source": "codex", "sessionId": "a"}}`,
			client.Event{ID: 18, Name: "remove", Data: []byte(`{"source":"codex","sessionId":"a"}`)}, false},
		{`{"id":0,"event":"x","data":{}}`, client.Event{}, true},
		{`{"id":9007199254740992,"event":"x","data":{}}`, client.Event{}, true}, // 2^53
		{`{"id":-1,"event":"x","data":{}}`, client.Event{}, true},
		{`{"id":1,"data":{}}`, client.Event{}, true},
		{`{"id":1,"event":"x"}`, client.Event{}, true},
		{`{"id":1,"event":"x","data":{]}`, client.Event{}, true},
		{`[1,2]`, client.Event{}, true},
		{`not json`, client.Event{}, true},
	}
	for _, tt := range tests {
		got, err := client.ParseNDJSON([]byte(tt.line))
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseNDJSON(%s): err = %v, want error %v", tt.line, err, tt.wantErr)
			continue
		}
		if err != nil && !errors.Is(err, client.ErrBadEvent) {
			t.Errorf("ParseNDJSON(%s): err = %v, want ErrBadEvent", tt.line, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseNDJSON(%s) (-want +got):\n%s", tt.line, diff)
		}
	}
}

func readAll(r *client.Reader) ([]client.Event, error) {
	var got []client.Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		ev.Data = bytes.Clone(ev.Data) // valid until the next call
		got = append(got, ev)
	}
}

func TestReadSSE(t *testing.T) {
	tests := []struct {
		name    string
		stream  string
		want    []client.Event
		pings   int
		wantErr error
	}{
		{"contract form", "retry: 2000\n\nid: 5\nevent: reset\ndata: {\"source\":\"codex\",\"sessions\":[]}\n\n: ping\n\nid: 6\nevent: upsert\ndata: {\"source\":\"codex\"}\n\n",
			[]client.Event{{ID: 5, Name: "reset", Data: []byte(`{"source":"codex","sessions":[]}`)}, {ID: 6, Name: "upsert", Data: []byte(`{"source":"codex"}`)}}, 1, nil},
		{"CRLF and CR line ends", "id: 7\r\nevent: remove\r\ndata: {}\r\n\r\nid: 8\revent: remove\rdata: {}\r\r",
			[]client.Event{{ID: 7, Name: "remove", Data: []byte(`{}`)}, {ID: 8, Name: "remove", Data: []byte(`{}`)}}, 0, nil},
		{"no space after colon, multi-line data", "id:9\nevent:diagnostic\ndata:{\"a\":\ndata: 1}\n\n",
			[]client.Event{{ID: 9, Name: "diagnostic", Data: []byte(`{"a":1}`)}}, 0, nil},
		{"no event name is a message", "id: 3\ndata: 1\n\n", []client.Event{{ID: 3, Name: "message", Data: []byte(`1`)}}, 0, nil},
		{"unfinished event at the end is dropped", "id: 10\nevent: upsert\ndata: {}\n", nil, 0, nil},
		{"unknown fields ignored", "id: 11\nfoo: bar\nevent: upsert\ndata: {}\n\n", []client.Event{{ID: 11, Name: "upsert", Data: []byte(`{}`)}}, 0, nil},
		{"an id with NUL is ignored", "id: 1\x002\ndata: {}\n\n", nil, 0, client.ErrBadEvent},
		{"missing id", "event: upsert\ndata: {}\n\n", nil, 0, client.ErrBadEvent},
		{"data not JSON", "id: 12\nevent: upsert\ndata: hello\n\n", nil, 0, client.ErrBadEvent},
		{"line too long", "id: 13\ndata: \"" + strings.Repeat("x", 300) + "\"\n\n", nil, 0, client.ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := client.NewReader(strings.NewReader(tt.stream), client.SSE, 256)
			pings := 0
			r.Ping = func() { pings++ }
			got, err := readAll(r)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if pings != tt.pings {
				t.Errorf("%d pings, want %d", pings, tt.pings)
			}
		})
	}
}

func TestReadNDJSON(t *testing.T) {
	stream := "{\"id\":1,\"event\":\"reset\",\"data\":{\"source\":\"s\",\"sessions\":[]}}\n\n\r\n{\"id\":2,\"event\":\"remove\",\"data\":{}}"
	r := client.NewReader(strings.NewReader(stream), client.NDJSON, 0)
	pings := 0
	r.Ping = func() { pings++ }
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []client.Event{{ID: 1, Name: "reset", Data: []byte(`{"source":"s","sessions":[]}`)}, {ID: 2, Name: "remove", Data: []byte(`{}`)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if pings != 2 {
		t.Errorf("%d keep-alive lines, want 2", pings)
	}
	if _, err := readAll(client.NewReader(strings.NewReader("garbage\n"), client.NDJSON, 0)); !errors.Is(err, client.ErrBadEvent) {
		t.Errorf("garbage: err = %v, want ErrBadEvent", err)
	}
}

// checkEvent fails on an event the decoders must never produce.
func checkEvent(t *testing.T, ev client.Event) {
	if ev.ID == 0 || ev.ID >= 1<<53 || ev.Name == "" || len(ev.Data) == 0 || bytes.ContainsAny(ev.Data, "\n\r") {
		t.Fatalf("accepted a bad event: %+v", ev)
	}
}

func FuzzParseNDJSON(f *testing.F) {
	f.Add([]byte(`{"id":17,"event":"upsert","data":{"source":"codex"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := client.ParseNDJSON(line)
		if err != nil {
			if !errors.Is(err, client.ErrBadEvent) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		checkEvent(t, ev)
	})
}

func FuzzReader(f *testing.F) {
	f.Add("id: 5\nevent: reset\ndata: {}\n\n", false)
	f.Add("{\"id\":1,\"event\":\"x\",\"data\":[]}\n", true)
	f.Fuzz(func(t *testing.T, stream string, ndjson bool) {
		format := client.SSE
		if ndjson {
			format = client.NDJSON
		}
		r := client.NewReader(strings.NewReader(stream), format, 1<<10)
		for {
			ev, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, client.ErrBadEvent) && !errors.Is(err, client.ErrLineTooLong) {
					t.Fatalf("untyped error %v", err)
				}
				return
			}
			checkEvent(t, ev)
		}
	})
}

// TestReadLongAndSplit reads events short and far longer than the
// reader's buffer, with every line ending SSE allows, however the bytes
// are split between reads.
func TestReadLongAndSplit(t *testing.T) {
	var want []client.Event
	for i, n := range []int{1, 5000, 70000, 300000, 3} {
		data := `{"title":"` + strings.Repeat("y", n) + `"}`
		want = append(want, client.Event{ID: uint64(i + 1), Name: "upsert", Data: []byte(data)})
	}
	for _, end := range []string{"\n", "\r\n", "\r"} {
		var sse, nd strings.Builder
		for _, ev := range want {
			sse.WriteString("id: " + strconv.FormatUint(ev.ID, 10) + end + "event: upsert" + end + "data: " + string(ev.Data) + end + end)
			nd.WriteString(`{"id":` + strconv.FormatUint(ev.ID, 10) + `,"event":"upsert","data":` + string(ev.Data) + "}" + end)
		}
		for _, split := range []struct {
			name string
			r    func(string) io.Reader
		}{
			{"whole", func(s string) io.Reader { return strings.NewReader(s) }},
			{"byte by byte", func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }},
			{"halves", func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) }},
		} {
			for _, f := range []struct {
				format client.Format
				stream string
			}{{client.SSE, sse.String()}, {client.NDJSON, nd.String()}} {
				got, err := readAll(client.NewReader(split.r(f.stream), f.format, 0))
				if err != nil {
					t.Fatalf("%q %s %v: %v", end, split.name, f.format, err)
				}
				same := len(got) == len(want)
				for i := 0; same && i < len(got); i++ {
					same = got[i].ID == want[i].ID && got[i].Name == want[i].Name && bytes.Equal(got[i].Data, want[i].Data)
				}
				if !same {
					t.Errorf("%q %s %v: events differ (%d read)", end, split.name, f.format, len(got))
				}
				if f.format != client.SSE {
					continue
				}
				r := client.NewReader(split.r(f.stream), f.format, 0)
				r.SkipData = true
				got, err = readAll(r)
				same = err == nil && len(got) == len(want)
				for i := 0; same && i < len(got); i++ {
					same = got[i].ID == want[i].ID && got[i].Name == want[i].Name && got[i].Data == nil
				}
				if !same {
					t.Errorf("%q %s SkipData: events differ (%v, %d read)", end, split.name, err, len(got))
				}
			}
		}
	}
}

// TestReadSkipData: a counting client gets every event's id and name,
// however long its data, within the reader's own buffer.
func TestReadSkipData(t *testing.T) {
	stream := "id: 1\nevent: reset\ndata: {\"x\":\"" + strings.Repeat("z", 100000) + "\"}\n\n: ping\n\nid: 2\nevent: upsert\ndata: not even JSON\n\n"
	r := client.NewReader(iotest.HalfReader(strings.NewReader(stream)), client.SSE, 1024)
	r.SkipData = true
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []client.Event{{ID: 1, Name: "reset"}, {ID: 2, Name: "upsert"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
