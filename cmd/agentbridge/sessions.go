package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

func init() {
	register("sessions", "list the sessions of a running bridge (table, or --json)", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return sessionsMain(ctx, args, os.Environ(), stdout, stderr)
	})
}

// sessionEntry is one session as GET /v1/sessions lists it.
type sessionEntry struct {
	Source   string               `json:"source"`
	Snapshot agentbridge.Snapshot `json:"snapshot"`
}

// sessionList is the answer of GET /v1/sessions.
type sessionList struct {
	Revision uint64         `json:"revision"`
	Sessions []sessionEntry `json:"sessions"`
}

// maxTitle is how many characters of a title the table shows.
const maxTitle = 60

func sessionsMain(ctx context.Context, args, env []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("sessions", pflag.ContinueOnError)
	clientFlags(fs)
	var filter filterFlags
	filter.register(fs)
	asJSON := fs.Bool("json", false, "print the listing as JSON, as GET /v1/sessions answers it")
	colorMode := fs.String("color", "auto", "colour the status column: auto (when stdout is a terminal), always or never")
	if done, err := parseFlags(fs, args, stderr, "sessions [flags]"); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	color, err := useColor(*colorMode, stdout, env)
	if err != nil {
		return err
	}
	q := url.Values{}
	if err := filter.query(q); err != nil {
		return err
	}
	c, err := newClient(fs, env)
	if err != nil {
		return err
	}
	resp, err := c.Do(ctx, http.MethodGet, "/v1/sessions", q, nil, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("agentbridge at %s: read sessions: %w", c.Addr, err)
	}
	if *asJSON {
		var out bytes.Buffer
		if err := json.Indent(&out, body, "", "  "); err != nil {
			return fmt.Errorf("agentbridge at %s: bad answer to /v1/sessions: %w", c.Addr, err)
		}
		out.WriteByte('\n')
		_, err := stdout.Write(out.Bytes())
		return err
	}
	var list sessionList
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("agentbridge at %s: bad answer to /v1/sessions: %w", c.Addr, err)
	}
	if len(list.Sessions) == 0 {
		fmt.Fprintln(stderr, "no sessions")
		return nil
	}
	return writeTable(stdout, list.Sessions, tableStyle{
		now:   time.Now(),
		home:  envGet(env, "HOME"),
		color: color,
	})
}

// tableStyle is how the table is drawn.
type tableStyle struct {
	now   time.Time
	home  string // cwd under it is shown as ~/…
	color bool
}

// statusOrder puts what needs the user first.
var statusOrder = map[agentbridge.Status]int{
	agentbridge.StatusWaiting: 0, agentbridge.StatusBlocked: 1, agentbridge.StatusRunning: 2,
	agentbridge.StatusDone: 3, agentbridge.StatusIdle: 4, agentbridge.StatusExited: 5,
}

// statusColor is the ANSI SGR code of each status.
var statusColor = map[agentbridge.Status]string{
	agentbridge.StatusWaiting: "1;33", // bold yellow: needs you
	agentbridge.StatusBlocked: "1;31", // bold red
	agentbridge.StatusRunning: "32",   // green
	agentbridge.StatusDone:    "36",   // cyan
	agentbridge.StatusIdle:    "2",    // dim
	agentbridge.StatusExited:  "2",
}

// writeTable prints the sessions as an aligned table: harness, status, age
// (since the last turn ended), title and cwd. Sessions that need the user
// come first, then the most recently active.
func writeTable(w io.Writer, entries []sessionEntry, st tableStyle) error {
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b sessionEntry) int {
		if d := rank(a.Snapshot.Status) - rank(b.Snapshot.Status); d != 0 {
			return d
		}
		if a.Snapshot.LastTurnEndedAt != b.Snapshot.LastTurnEndedAt {
			if a.Snapshot.LastTurnEndedAt > b.Snapshot.LastTurnEndedAt {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(a.Snapshot.ID, b.Snapshot.ID)
	})
	rows := [][]string{{"HARNESS", "STATUS", "AGE", "TITLE", "CWD"}}
	for _, e := range entries {
		s := e.Snapshot
		r := []string{
			cell(s.Harness),
			cell(string(s.Status)),
			age(s.LastTurnEndedAt, st.now),
			shorten(cell(s.Title), maxTitle),
			cell(tilde(s.Cwd, st.home)),
		}
		for i := range r {
			if r[i] == "" {
				r[i] = "-"
			}
		}
		rows = append(rows, r)
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for n, r := range rows {
		for i, c := range r {
			last := i == len(r)-1
			pad := ""
			if !last {
				pad = strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2)
			}
			if st.color && i == 1 && n > 0 {
				if code, ok := statusColor[agentbridge.Status(c)]; ok {
					c = "\x1b[" + code + "m" + c + "\x1b[0m"
				}
			}
			b.WriteString(c)
			b.WriteString(pad)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func rank(s agentbridge.Status) int {
	if r, ok := statusOrder[s]; ok {
		return r
	}
	return len(statusOrder)
}

// cell makes text safe to print on a terminal: control characters (escape
// sequences included) become spaces. The bridge validates display text, but
// a client does not rely on that.
func cell(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) && utf8.ValidString(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
}

// shorten cuts s to at most n characters, ending with … when cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// tilde shows a path under home as ~/….
func tilde(p, home string) string {
	if home == "" || home == "/" || p == "" {
		return p
	}
	home = strings.TrimSuffix(home, "/")
	if p == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(p, home+"/"); ok {
		return "~/" + rest
	}
	return p
}

// age is how long ago the epoch-ms time was, in its largest unit: 42s, 5m,
// 3h, 2d; empty when it is unknown.
func age(ms int64, now time.Time) string {
	if ms <= 0 {
		return ""
	}
	d := max(now.Sub(time.UnixMilli(ms)), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// useColor decides whether to colour: "always", "never", or "auto" (stdout
// is a terminal, NO_COLOR is unset and TERM is not dumb).
func useColor(mode string, stdout io.Writer, env []string) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto":
		if envGet(env, "NO_COLOR") != "" || envGet(env, "TERM") == "dumb" {
			return false, nil
		}
		f, ok := stdout.(*os.File)
		if !ok {
			return false, nil
		}
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		return err == nil, nil
	default:
		return false, fmt.Errorf("--color: %q is not auto, always or never", mode)
	}
}

// envGet returns the last value of key in a KEY=VALUE environment.
func envGet(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}
