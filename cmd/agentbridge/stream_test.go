package main

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStream: one connection, printed as it came (a heartbeat as a blank
// line), with --since and --host passed on; it ends when the bridge ends
// the stream and never reconnects by itself.
func TestStream(t *testing.T) {
	lines := []string{ndjson(43, "upsert", `{"source":"codex","snapshot":{"id":"a","harness":"codex","status":"idle"}}`), "\n", ndjson(44, "remove", `{"source":"codex","sessionId":"a"}`)}
	srv := &streamServer{script: [][]string{lines}}
	fb := httptest.NewServer(srv)
	defer fb.Close()
	var stdout, stderr bytes.Buffer
	args := []string{"--addr", strings.TrimPrefix(fb.URL, "http://"), "--since", "42", "--host", "local"}
	if err := runArgs(t.Context(), "stream", args, testEnv(t), strings.NewReader(""), &stdout, &stderr, fastBackoff); err != nil {
		t.Fatalf("stream: %v; stderr: %s", err, stderr.String())
	}
	if diff := cmp.Diff(strings.Join(lines, ""), stdout.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"42"}, srv.sinces()); diff != "" {
		t.Errorf("connections and their since (-want +got):\n%s", diff)
	}
}

func TestStreamNoBridge(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := runArgs(t.Context(), "stream", []string{"--addr", "127.0.0.1:1"}, testEnv(t), strings.NewReader(""), &stdout, &stderr, fastBackoff)
	if err == nil {
		t.Fatal("stream with no bridge returned nil")
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
}
