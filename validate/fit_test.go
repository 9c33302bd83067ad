package validate

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
)

func TestDisplay(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 100)
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"", MaxTitle, ""},
		{"  fix\tthe /home/u/repo/main.go\nbug  ", MaxTitle, "fix the …/main.go bug"},
		{"key sk-ant-api03-" + strings.Repeat("a", 40), MaxTitle, "key " + text.Redacted},
		{long, 10, "word word…"},
		{"\x00\x01", MaxTitle, ""},
	}
	for _, tt := range tests {
		if got := text.Display(tt.in, tt.limit); got != tt.want {
			t.Errorf("Display(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
	if Title(long) != text.Display(long, MaxTitle) || Label(long) != text.Display(long, MaxText) {
		t.Errorf("Title and Label are not Display with their bounds")
	}
}

func TestCleanCwd(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/work/proj": "/work/proj", "/work/proj/": "/work/proj", "/": "/", "//": "/",
		"/a/./b/": "/a/b", "/a//b": "/a/b",
		"/a/../b": "", "/..": "", "relative": "", `C:\Users\x`: "", "": "", "/a\x00b": "", "/a\xffb": "",
		"/" + strings.Repeat("a", MaxCwdBytes): "",
	} {
		got := CleanCwd(in)
		if got != want {
			t.Errorf("CleanCwd(%q) = %q, want %q", in, got, want)
		}
		if got != "" && !ValidCwd(got) {
			t.Errorf("CleanCwd(%q) = %q, which ValidCwd refuses", in, got)
		}
	}
}

func TestRedactTyped(t *testing.T) {
	t.Parallel()
	key := "sk-ant-api03-" + strings.Repeat("Ab1", 20)
	long := strings.Repeat("x", MaxTitle-6) + " pwd=a" // redaction makes it longer than MaxTitle
	s := agentbridge.Snapshot{ID: "s", Harness: "h", Status: "waiting", Title: long, Model: "m " + key,
		WaitingFor: "Approve: export TOKEN=" + key,
		Subagents:  []agentbridge.Subagent{{ID: "a", Title: "use " + key, Type: "t", Status: "running"}}}
	RedactSnapshot(&s)
	for _, f := range []string{s.Title, s.Model, s.WaitingFor, s.Subagents[0].Title} {
		if strings.Contains(f, "Ab1Ab1") || strings.Contains(f, "pwd=a") {
			t.Errorf("RedactSnapshot left a secret: %q", f)
		}
	}
	if is := Snapshot(s, nil); len(is) != 0 {
		t.Errorf("RedactSnapshot made the snapshot invalid: %v", is)
	}

	e := agentbridge.Event{Kind: "turn.started", TurnID: "t", PromptText: "my password is password=hunter22 ok", Summary: "Bearer " + key,
		Title: key, Model: key, Name: key, Reason: key, Signal: "SIG", Type: key}
	RedactEvent(&e)
	for _, f := range []string{e.PromptText, e.Summary, e.Title, e.Model, e.Name, e.Reason, e.Type} {
		if strings.Contains(f, "hunter22") || strings.Contains(f, "Ab1Ab1") {
			t.Errorf("RedactEvent left a secret: %q", f)
		}
	}
	if e.Signal != "SIG" || e.TurnID != "t" {
		t.Errorf("RedactEvent changed text without a secret: %+v", e)
	}

	d := agentbridge.Diagnostic{Code: "auth-failed", Message: "request failed with Authorization: Bearer " + key}
	RedactDiagnostic(&d)
	if strings.Contains(d.Message, "Ab1Ab1") || d.Code != "auth-failed" {
		t.Errorf("RedactDiagnostic = %+v", d)
	}
}
