package validate

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Seed corpora live in testdata/fuzz/<Name>/; plain go test runs them.

func FuzzDecodeSnapshot(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s, is := DecodeSnapshot(data, nil)
		checkWellFormed(t, "DecodeSnapshot", is)
		if len(is) > 0 {
			return
		}
		if typed := Snapshot(s, nil); len(typed) != 0 {
			t.Fatalf("DecodeSnapshot accepted what Snapshot rejects: %v", typed)
		}
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		s2, is2 := DecodeSnapshot(raw, Harnesses{s.Harness: true})
		if len(is2) != 0 {
			t.Fatalf("re-encoded snapshot %s rejected: %v", raw, is2)
		}
		if diff := cmp.Diff(s, s2, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
		// What the bridge takes, with a pid and a cwd, the host takes.
		if s.PID == 0 {
			s.PID = 1
		}
		if s.Cwd == "" {
			s.Cwd = "/"
		}
		if is := SnapshotAs(s, Harnesses{s.Harness: true}, Host); len(is) != 0 {
			t.Fatalf("the host refuses %+v that the bridge takes: %v", s, is)
		}
		_, his := DecodeSnapshotAs(data, nil, Host)
		checkWellFormed(t, "DecodeSnapshotAs(Host)", his)
	})
}

func FuzzDecodeReset(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, is := DecodeReset(data, nil)
		checkWellFormed(t, "DecodeReset", is)
		if len(is) > 0 {
			return
		}
		if typed := Reset(ss, nil); len(typed) != 0 {
			t.Fatalf("DecodeReset accepted what Reset rejects: %v", typed)
		}
		raw, err := json.Marshal(ss)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		ss2, is2 := DecodeReset(raw, nil)
		if len(is2) != 0 {
			t.Fatalf("re-encoded reset %s rejected: %v", raw, is2)
		}
		if diff := cmp.Diff(ss, ss2, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}

func FuzzDecodeDiagnostic(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		d, is := DecodeDiagnostic(data)
		checkWellFormed(t, "DecodeDiagnostic", is)
		if len(is) > 0 {
			return
		}
		if typed := Diagnostic(d); len(typed) != 0 {
			t.Fatalf("DecodeDiagnostic accepted what Diagnostic rejects: %v", typed)
		}
		raw, _ := json.Marshal(d)
		if d2, is2 := DecodeDiagnostic(raw); len(is2) != 0 || d2 != d {
			t.Fatalf("round trip of %s: %+v, %v", raw, d2, is2)
		}
		r := d
		RedactDiagnostic(&r)
		if is := Diagnostic(r); len(is) != 0 {
			t.Fatalf("RedactDiagnostic made %+v invalid: %v", r, is)
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		e, is := DecodeEvent(data)
		checkWellFormed(t, "DecodeEvent", is)
		if len(is) > 0 {
			return
		}
		if typed := Event(e); len(typed) != 0 {
			t.Fatalf("DecodeEvent accepted what Event rejects: %v", typed)
		}
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		e2, is2 := DecodeEvent(raw)
		if len(is2) != 0 {
			t.Fatalf("re-encoded event %s rejected: %v", raw, is2)
		}
		if diff := cmp.Diff(e, e2); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
		r := e
		RedactEvent(&r)
		if is := Event(r); len(is) != 0 {
			t.Fatalf("RedactEvent made %+v invalid: %v", r, is)
		}
	})
}
