package notify

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A title or reason can hold anything an agent's journal holds; none of it
// may become AppleScript, and osascript gets exactly two arguments after
// the fixed script.
func TestBannerArgs(t *testing.T) {
	for _, tc := range []struct{ name, title, text, wantTitle, wantText string }{
		{"plain", "Claude Code is waiting for you", "fix the build", "Claude Code is waiting for you", "fix the build"},
		{"quotes stay text", `x" & (do shell script "touch /tmp/pwned") & "`, `\" end run`,
			`x" & (do shell script "touch /tmp/pwned") & "`, `\" end run`},
		{"newlines and NUL", "a\nb", "c\x00d\re", "a b", "c d e"},
		{"leading dash", "-e", "--", "-e", "--"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := bannerArgs(tc.title, tc.text)
			script := []string{"-e", bannerScript[0], "-e", bannerScript[1], "-e", bannerScript[2], "--"}
			if !slices.Equal(args[:len(script)], script) {
				t.Fatalf("script = %q, want the fixed one", args[:len(script)])
			}
			if got := args[len(script):]; !slices.Equal(got, []string{tc.wantTitle, tc.wantText}) {
				t.Fatalf("arguments = %q, want %q, %q", got, tc.wantTitle, tc.wantText)
			}
		})
	}
	long := bannerArgs(strings.Repeat("é", 300), strings.Repeat("x", 5000))
	if n := len([]rune(long[len(long)-2])); n != 256 {
		t.Errorf("title of %d runes, want 256", n)
	}
	if n := len([]rune(long[len(long)-1])); n != 1024 {
		t.Errorf("text of %d runes, want 1024", n)
	}
}

// Notify runs osascript (here a stand-in that records its arguments) with
// the agent's name and the event as the title.
func TestBannerNotify(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "args")
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + record + "\n"
	if err := os.WriteFile(filepath.Join(dir, "osascript"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	b, err := NewBanner()
	if err != nil {
		t.Fatal(err)
	}
	b.Agent = func(h string) string { return map[string]string{"claude-code": "Claude Code"}[h] }
	err = b.Notify(Transition{Harness: "claude-code", Status: EventWaiting, Title: "fix the build", WaitingFor: "approve Bash"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if tail := lines[len(lines)-2:]; !slices.Equal(tail, []string{"Claude Code is waiting for you", "fix the build approve Bash"}) {
		t.Fatalf("osascript got %q", lines)
	}
}

func TestNewBannerWithoutOsascript(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := NewBanner(); err == nil || !strings.Contains(err.Error(), "osascript") {
		t.Fatalf("NewBanner without osascript: %v", err)
	}
}
