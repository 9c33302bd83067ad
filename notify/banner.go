package notify

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"unicode"
)

// ErrNoOsascript is (wrapped in) the error of NewBanner when osascript is
// not on PATH.
var ErrNoOsascript = errors.New("osascript not found: macOS notifications need /usr/bin/osascript")

// Banner raises macOS notifications through osascript (AppleScript's
// display notification). The text reaches the script as its arguments,
// never spliced into its source, so nothing in a session's title can run
// as AppleScript; control characters become spaces and each part is
// bounded. macOS keeps every notification: a session's next one does not
// replace its last.
type Banner struct {
	// Agent names a harness for people ("Claude Code"); nil or "": the id.
	Agent func(harness string) string

	osascript string
}

// NewBanner finds osascript on PATH.
func NewBanner() (*Banner, error) {
	p, err := exec.LookPath("osascript")
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoOsascript, err)
	}
	return &Banner{osascript: p}, nil
}

// Notify shows one transition: the agent and the event as the title, the
// session's title and the reason as the text.
func (b *Banner) Notify(tr Transition) error {
	summary, body := message(tr, b.Agent)
	args := bannerArgs(summary, body)
	out, err := exec.Command(b.osascript, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("osascript notification: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Close does nothing: each notification is a process of its own.
func (b *Banner) Close() error { return nil }

// bannerScript is the whole AppleScript osascript runs: fixed, whatever
// the notification says.
var bannerScript = []string{
	"on run argv",
	"display notification (item 2 of argv) with title (item 1 of argv)",
	"end run",
}

// bannerArgs are osascript's arguments for a notification: the fixed
// script, "--", then the title and the text as the script's argv.
func bannerArgs(title, text string) []string {
	args := make([]string, 0, 2*len(bannerScript)+3)
	for _, line := range bannerScript {
		args = append(args, "-e", line)
	}
	return append(args, "--", plain(title, 256), plain(text, 1024))
}

// plain is s with control characters (newlines, NUL …) as spaces, cut to
// max runes.
func plain(s string, max int) string {
	r := []rune(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
	if len(r) > max {
		r = append(r[:max-1], '…')
	}
	return string(r)
}
