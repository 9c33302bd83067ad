package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/text"
)

func newSessionsCmd(a *app) *cobra.Command {
	var o sessionsOptions
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "list the sessions of a running bridge (table, or --json)",
		Long: `List the sessions of a running bridge as a table. Sessions that need you
come first, then the most recently active. ID is the session id; one longer
than 12 characters is shortened to its shortest prefix of at least 8 that is
unique in the listing (--wide shows it whole, with the source and the whole
title). STATUS is running, waiting or blocked while a turn is in progress;
an idle session whose last turn ended shows how it ended (done, failed or
interrupted), one whose process is gone shows exited, and one that has had
no turn yet shows idle. AGE is the time since the last turn ended.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.sessions(cmd.Context(), cmd.Flags(), o)
		},
	}
	fs := cmd.Flags()
	clientFlags(fs)
	o.filter.register(fs)
	o.filter.complete(cmd)
	fs.BoolVar(&o.json, "json", false, "print the listing as JSON, as GET /v1/sessions answers it")
	fs.BoolVarP(&o.wide, "wide", "w", false, "show the whole session id and title, and the source")
	fs.StringVar(&o.color, "color", "auto", "colour the status column: auto (when stdout is a terminal), always or never")
	mustComplete(cmd, "color", fixedCompletions("auto", "always", "never"))
	return cmd
}

// sessionsOptions are the sessions subcommand's flags.
type sessionsOptions struct {
	filter     filterFlags
	json, wide bool
	color      string
}

// sessionEntry is one session as GET /v1/sessions lists it.
type sessionEntry struct {
	Source   string               `json:"source"`
	Snapshot agentbridge.Snapshot `json:"snapshot"`
	Host     string               `json:"host,omitempty"` // a remote's id; "" for the bridge's own
	Ended    *agentbridge.Ended   `json:"ended,omitempty"`
}

// The states the table shows beyond the snapshot's status: how an idle
// session's last turn ended, and a session whose process is gone.
const (
	shownDone        = "done"
	shownFailed      = "failed"
	shownInterrupted = "interrupted"
	shownExited      = "exited"
)

// shownStatus is what the STATUS column says of a session: its status,
// except that an ended session is "exited" and an idle one whose last turn
// ended says how (done, failed, interrupted).
func shownStatus(e *sessionEntry) string {
	s := &e.Snapshot
	switch {
	case e.Ended != nil:
		return shownExited
	case s.Status != agentbridge.StatusIdle || s.LastTurn == "":
		return string(s.Status)
	case s.LastTurn == agentbridge.LastTurnFailed:
		return shownFailed
	case s.LastTurn == agentbridge.LastTurnInterrupted:
		return shownInterrupted
	}
	return shownDone
}

// sessionList is the answer of GET /v1/sessions.
type sessionList struct {
	Revision uint64         `json:"revision"`
	Sessions []sessionEntry `json:"sessions"`
}

// maxTitle is how many characters of a title the table shows.
const maxTitle = 60

func (a *app) sessions(ctx context.Context, fs *pflag.FlagSet, o sessionsOptions) error {
	stdout, stderr, env := a.stdout, a.stderr, a.env
	color, err := useColor(o.color, stdout, env)
	if err != nil {
		return err
	}
	q := url.Values{}
	if err := o.filter.query(q); err != nil {
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
	if o.json {
		var out bytes.Buffer
		if err := json.Indent(&out, body, "", "  "); err != nil {
			return fmt.Errorf("agentbridge at %s: bad answer to /v1/sessions: %w", c.Addr, err)
		}
		out.WriteByte('\n')
		_, err := stdout.Write(text.EscapeJSON(out.Bytes()))
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
		wide:  o.wide,
		host:  remotesConfigured(fs, env) || slices.ContainsFunc(list.Sessions, func(e sessionEntry) bool { return e.Host != "" }),
	})
}

// tableStyle is how the table is drawn.
type tableStyle struct {
	now   time.Time
	home  string // cwd under it is shown as ~/…
	color bool
	wide  bool // whole ids and titles, and a SOURCE column
	host  bool // a HOST column: remotes are configured (local sessions show "-")
}

// remotesConfigured reports whether the configuration names remotes.
func remotesConfigured(fs *pflag.FlagSet, env []string) bool {
	cfg, err := config.Load(fs, env)
	return err == nil && len(cfg.Remotes) > 0
}

// statusOrder puts what needs the user first (keys: shownStatus).
var statusOrder = map[string]int{
	string(agentbridge.StatusWaiting): 0, string(agentbridge.StatusBlocked): 1, shownFailed: 2,
	string(agentbridge.StatusRunning): 3, shownDone: 4, shownInterrupted: 5,
	string(agentbridge.StatusIdle): 6, shownExited: 7,
}

// statusColor is the ANSI SGR code of each shown status.
var statusColor = map[string]string{
	string(agentbridge.StatusWaiting): "1;33", // bold yellow: needs you
	string(agentbridge.StatusBlocked): "1;31", // bold red
	shownFailed:                       "31",   // red
	string(agentbridge.StatusRunning): "32",   // green
	shownDone:                         "36",   // cyan
	shownInterrupted:                  "36",
	string(agentbridge.StatusIdle):    "2", // dim
	shownExited:                       "2",
}

// writeTable prints the sessions as an aligned table: id, harness, status,
// age (since the last turn ended), title and cwd; wide adds the source. Sessions that need the user
// come first, then the most recently active.
func writeTable(w io.Writer, entries []sessionEntry, st tableStyle) error {
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b sessionEntry) int {
		if d := rank(shownStatus(&a)) - rank(shownStatus(&b)); d != 0 {
			return d
		}
		if a.Snapshot.LastTurnEndedAt != b.Snapshot.LastTurnEndedAt {
			if a.Snapshot.LastTurnEndedAt > b.Snapshot.LastTurnEndedAt {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(a.Snapshot.ID, b.Snapshot.ID)
	})
	head := []string{"ID", "HARNESS", "STATUS", "AGE", "TITLE", "CWD"}
	const statusCol = 2
	if st.host {
		head = append([]string{"HOST"}, head...)
	}
	if st.wide {
		head = append([]string{"SOURCE"}, head...)
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = cell(e.Snapshot.ID)
	}
	if !st.wide {
		ids = shortIDs(ids)
	}
	rows := [][]string{head}
	for i, e := range entries {
		s := e.Snapshot
		title := cell(s.Title)
		if !st.wide {
			title = shorten(title, maxTitle)
		}
		r := []string{
			ids[i],
			cell(s.Harness),
			cell(shownStatus(&e)),
			age(s.LastTurnEndedAt, st.now),
			title,
			cell(tilde(s.Cwd, st.home)),
		}
		if st.host {
			r = append([]string{cell(e.Host)}, r...)
		}
		if st.wide {
			r = append([]string{cell(e.Source)}, r...)
		}
		for i := range r {
			if r[i] == "" {
				r[i] = "-"
			}
		}
		rows = append(rows, r)
	}
	colorCol := statusCol
	if st.wide {
		colorCol++
	}
	if st.host {
		colorCol++
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
			if st.color && i == colorCol && n > 0 {
				if code, ok := statusColor[c]; ok {
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

// Shortened ids: those longer than maxWholeID characters are shown by a
// prefix of at least minShortID.
const (
	minShortID = 8
	maxWholeID = 12
)

// shortIDs shortens each id longer than maxWholeID to its shortest prefix
// of at least minShortID characters that no other id in the list starts
// with, as Git shortens commit ids; duplicates stay whole. Ids are ASCII
// (the host's rule), so characters are bytes.
func shortIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if len(id) <= maxWholeID {
			out[i] = id
			continue
		}
		n := minShortID
		for j, other := range ids {
			if j == i || other == id {
				continue
			}
			for n < len(id) && strings.HasPrefix(other, id[:n]) {
				n++
			}
		}
		out[i] = id[:n]
		if n < len(id) {
			out[i] += "…"
		}
	}
	return out
}

func rank(s string) int {
	if r, ok := statusOrder[s]; ok {
		return r
	}
	return len(statusOrder)
}

// cell makes text safe to print on a terminal (text.Printable):
// control characters (escape sequences included) become spaces, characters
// that reorder or hide text show as U+FFFD. The bridge validates display
// text, but a client does not rely on that.
func cell(s string) string { return text.Printable(s) }

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
		return isTerminal(stdout), nil
	default:
		return false, usagef("--color: %q is not auto, always or never", mode)
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
