package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/history"
	"github.com/agentbridge/agentbridge/internal/atomicfile"
	"github.com/agentbridge/agentbridge/text"
)

// historyFilter are the flags that select sessions of the history.
type historyFilter struct {
	since, project, harness, source, host, outcome string
}

func (f *historyFilter) register(fs *pflag.FlagSet, since string) {
	fs.StringVar(&f.since, "since", since, "how far back: a length of `time` before now (7d, 12h), an RFC 3339 time or epoch ms")
	fs.StringVar(&f.project, "project", "", "only sessions of the project `dir` is in (its root: the repository's top, as the history keeps it)")
	fs.StringVar(&f.harness, "harness", "", "only sessions of this harness `id`")
	fs.StringVar(&f.source, "source", "", "only sessions of this source `id`")
	fs.StringVar(&f.host, "host", "", "only sessions of this `host`: a remote's id, or local")
	fs.StringVar(&f.outcome, "outcome", "", "only sessions with a turn that ended so: success, error, cancelled, or running (a turn still open)")
}

func (f *historyFilter) complete(cmd *cobra.Command) {
	mustComplete(cmd, "outcome", fixedCompletions("success", "error", "cancelled", "running"))
	mustComplete(cmd, "project", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
}

// filter turns the flags into the client's filter at now; a value the
// bridge would refuse is a usage error here.
func (f *historyFilter) filter(now time.Time) (client.HistoryFilter, error) {
	var hf client.HistoryFilter
	if f.since != "" {
		from, ok := parseSince(f.since, now)
		if !ok {
			return hf, usagef("--since: %q is not a length of time (7d, 12h), an RFC 3339 time or epoch ms", f.since)
		}
		hf.From = from
	}
	if f.project != "" {
		p, err := filepath.Abs(f.project)
		if err != nil {
			return hf, fmt.Errorf("--project: %w", err)
		}
		hf.Project = history.ProjectRoot(p) // the project a directory of it is in, as the history keeps it
	}
	if f.outcome != "" && !slices.Contains([]string{"success", "error", "cancelled", "running"}, f.outcome) {
		return hf, usagef("--outcome: %q is not success, error, cancelled or running", f.outcome)
	}
	hf.Harness, hf.Source, hf.Host, hf.Outcome = f.harness, f.source, f.host, f.outcome
	return hf, nil
}

// parseSince reads --since: epoch milliseconds (digits only, as the
// bridge reads from: "0" is the epoch, not no time at all), a length of
// time before now or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, bool) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		ms, err := strconv.ParseInt(s, 10, 64)
		return time.UnixMilli(ms), err == nil
	}
	if d, err := history.ParseAge(s); err == nil {
		return now.Add(-d), true
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// historyOptions are the flags of `agentbridge history`.
type historyOptions struct {
	filter    historyFilter
	limit     int
	json, csv bool
}

func newHistoryCmd(a *app) *cobra.Command {
	var o historyOptions
	cmd := &cobra.Command{
		Use:   "history",
		Short: "list what the sessions of a running bridge did (table, --json or --csv)",
		Long: `List the sessions the bridge saw in a time range (default the last 7 days),
newest first, from its history (history.enabled, on by default; kept for
history.retention, 90 days by default). STARTED is the session's first event
in local time; TURNS its turns; ACTIVE the summed length of its ended turns;
WAITING the time it waited for you (a permission prompt, a question);
TOKENS every token it used (input, output and cache); EST. COST what they
cost by the bridge's price table: an estimate, never a bill ("-" where the
model's price is unknown). --json prints GET /v1/history's answer, --csv
its CSV export (one row per turn).

  agentbridge history --since 24h --harness codex
  agentbridge history export --output history.csv
  agentbridge history prune --older-than 30d`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.history(cmd.Context(), cmd.Flags(), o)
		},
	}
	fs := cmd.Flags()
	clientFlags(fs)
	o.filter.register(fs, "7d")
	o.filter.complete(cmd)
	fs.IntVar(&o.limit, "limit", 0, fmt.Sprintf("sessions at most, the newest (1 to %d; default %d)", history.MaxLimit, history.DefaultLimit))
	fs.BoolVar(&o.json, "json", false, "print the sessions as JSON, as GET /v1/history answers them")
	fs.BoolVar(&o.csv, "csv", false, "print the CSV export: one row per turn")
	cmd.AddCommand(newHistoryExportCmd(a), newHistoryPruneCmd(a))
	return cmd
}

// historyQuery is the query of the history's flags.
func historyQuery(f *historyFilter, limit int, now time.Time) (client.HistoryQuery, error) {
	hf, err := f.filter(now)
	if err != nil {
		return client.HistoryQuery{}, err
	}
	if limit < 0 || limit > history.MaxLimit {
		return client.HistoryQuery{}, usagef("--limit: %d is not from 1 to %d", limit, history.MaxLimit)
	}
	return client.HistoryQuery{HistoryFilter: hf, Limit: limit}, nil
}

func (a *app) history(ctx context.Context, fs *pflag.FlagSet, o historyOptions) error {
	if o.json && o.csv {
		return usagef("--json and --csv: give one")
	}
	q, err := historyQuery(&o.filter, o.limit, time.Now())
	if err != nil {
		return err
	}
	c, err := newClient(fs, a.env)
	if err != nil {
		return err
	}
	switch {
	case o.csv:
		b, err := c.HistoryCSV(ctx, q)
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(b)
		return err
	case o.json:
		return a.printJSON(ctx, c, q)
	}
	sessions, err := c.History(ctx, q)
	if err != nil {
		return err
	}
	if len(sessions) == 0 {
		fmt.Fprintln(a.stderr, "no sessions in the history for this range")
		return nil
	}
	return writeHistoryTable(a.stdout, sessions, a.location())
}

// printJSON prints the JSON answer of GET /v1/history (indented, escaped as the
// other --json outputs are).
func (a *app) printJSON(ctx context.Context, c *cliClient, q client.HistoryQuery) error {
	body, err := c.HistoryJSON(ctx, q)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		return fmt.Errorf("agentbridge at %s: bad answer to /v1/history: %w", c.Addr, err)
	}
	out.WriteByte('\n')
	_, err = a.stdout.Write(text.EscapeJSON(out.Bytes()))
	return err
}

// location is the zone local times are shown in: TZ of the app's
// environment, else the process's.
func (a *app) location() *time.Location {
	if tz := a.getenv("TZ"); tz != "" {
		if loc, err := time.LoadLocation(strings.TrimPrefix(tz, ":")); err == nil {
			return loc
		}
	}
	return time.Local
}

// writeHistoryTable prints sessions, in the order given, as an aligned
// table, and under it a footnote when a cost is shown.
func writeHistoryTable(w io.Writer, sessions []agentbridge.HistorySession, loc *time.Location) error {
	host := slices.ContainsFunc(sessions, func(s agentbridge.HistorySession) bool { return s.Host != "" })
	head := []string{"STARTED", "AGENT", "PROJECT", "TURNS", "ACTIVE", "WAITING", "TOKENS", "EST. COST", "TITLE"}
	if host {
		head = append([]string{"HOST"}, head...)
	}
	rows := [][]string{head}
	var asOf string
	for _, s := range sessions {
		started := "-"
		if s.StartedAt > 0 {
			started = time.UnixMilli(s.StartedAt).In(loc).Format("2006-01-02 15:04")
		}
		project := s.Project
		if project != "" {
			project = filepath.Base(project)
		}
		r := []string{started, cell(s.Harness), cell(project), strconv.Itoa(len(s.Turns)), span(s.ActiveMs), span(s.WaitingMs),
			tokens(s.Usage.InputTokens + s.Usage.OutputTokens + s.Usage.CacheReadTokens + s.Usage.CacheWriteTokens),
			estCost(s.Cost), shorten(cell(s.Title), maxTitle)}
		if host {
			r = append([]string{cell(s.Host)}, r...)
		}
		rows = append(rows, r)
		asOf = pricesAsOf(asOf, s.Cost)
	}
	return writeAligned(w, rows, costNote(asOf))
}

// pricesAsOf keeps the first price table date seen.
func pricesAsOf(seen string, c *agentbridge.Cost) string {
	if seen == "" && c != nil {
		return c.PricesAsOf
	}
	return seen
}

// costNote is the footnote under a table that shows costs.
func costNote(asOf string) string {
	if asOf == "" {
		return ""
	}
	when := "of " + asOf
	if asOf == "config" {
		when = "of your configuration (history.prices)"
	}
	return "~ costs are estimates from the price table " + when + ", not a bill; - where a model's price is unknown"
}

// writeAligned prints rows as columns two spaces apart (a cell that is
// empty shows as "-"; numbers are not right-aligned, as in the sessions
// table), then note on a line of its own after a blank one, if any.
func writeAligned(w io.Writer, rows [][]string, note string) error {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i := range r {
			if r[i] == "" {
				r[i] = "-"
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	if note != "" {
		b.WriteString("\n" + note + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// span shows milliseconds as 1h02m, 3m05s or 42s.
func span(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	default:
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
}

// tokens shows a count as 950, 15.2k or 1.2M.
func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 0, 64) + "k"
	case n >= 1_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// estCost shows an estimated cost as ~$0.42 ("" when unknown); a cost
// below a cent is ~$<0.01.
func estCost(c *agentbridge.Cost) string {
	switch {
	case c == nil:
		return ""
	case c.USD > 0 && c.USD < 0.005:
		return "~$<0.01"
	}
	return "~$" + strconv.FormatFloat(c.USD, 'f', 2, 64)
}

// exportOptions are the flags of `agentbridge history export`.
type exportOptions struct {
	filter         historyFilter
	limit          int
	format, output string
}

func newHistoryExportCmd(a *app) *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export",
		Short: "export the history as CSV or JSON, to stdout or a file",
		Long: `Export the sessions of the history in a time range (default all of it: the
configured history.retention, 90 days unless set) as CSV (the default: RFC 4180, a header row, then one row per turn
with its session's columns; times in RFC 3339 UTC; est_cost_usd is an
estimate, empty where a model's price is unknown; a cell that a spreadsheet
would run as a formula starts with a tab) or as JSON (GET /v1/history's
answer). --output writes a file (mode 0600, replaced in one step: a reader
never sees half of it) instead of stdout.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.historyExport(cmd.Context(), cmd.Flags(), o)
		},
	}
	fs := cmd.Flags()
	clientFlags(fs)
	o.filter.register(fs, "")
	o.filter.complete(cmd)
	fs.IntVar(&o.limit, "limit", history.MaxLimit, fmt.Sprintf("sessions at most, the newest (1 to %d)", history.MaxLimit))
	fs.StringVar(&o.format, "format", "csv", "csv or json")
	fs.StringVarP(&o.output, "output", "o", "", "write to this `file` instead of stdout")
	mustComplete(cmd, "format", fixedCompletions("csv", "json"))
	return cmd
}

func (a *app) historyExport(ctx context.Context, fs *pflag.FlagSet, o exportOptions) error {
	if o.format != "csv" && o.format != "json" {
		return usagef("--format: %q is not csv or json", o.format)
	}
	if o.filter.since == "" { // all the history kept
		cfg, err := config.Load(fs, a.env)
		if err != nil {
			return err
		}
		o.filter.since = ageText(cfg.History.Retention)
	}
	q, err := historyQuery(&o.filter, o.limit, time.Now())
	if err != nil {
		return err
	}
	c, err := newClient(fs, a.env)
	if err != nil {
		return err
	}
	var b []byte
	if o.format == "csv" {
		b, err = c.HistoryCSV(ctx, q)
	} else {
		b, err = c.HistoryJSON(ctx, q)
	}
	if err != nil {
		return err
	}
	if n := exportedSessions(b, o.format); n >= q.Limit && q.Limit > 0 {
		fmt.Fprintf(a.stderr, "agentbridge history export: stopped at %d sessions (the newest of the range); narrow it (--since, --project, --harness) to export the rest\n", n)
	}
	if o.output == "" || o.output == "-" {
		_, err := a.stdout.Write(b)
		return err
	}
	if err := atomicfile.WriteFile(o.output, b, 0o600); err != nil {
		return fmt.Errorf("write the export: %w", err)
	}
	fmt.Fprintf(a.stderr, "history exported to %s\n", o.output)
	return nil
}

func newHistoryPruneCmd(a *app) *cobra.Command {
	var olderThan string
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "remove the history older than an age (default history.retention)",
		Long: `Remove from the bridge's history the sessions whose last event is older than
--older-than (default the configured history.retention, 90 days unless set),
with their turns, waits and usage. The bridge also prunes by itself, at
start and every day, what is older than history.retention.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.historyPrune(cmd.Context(), cmd.Flags(), olderThan)
		},
	}
	fs := cmd.Flags()
	clientFlags(fs)
	fs.StringVar(&olderThan, "older-than", "", "remove what is older than this `age` (90d, 720h; default history.retention)")
	return cmd
}

func (a *app) historyPrune(ctx context.Context, fs *pflag.FlagSet, olderThan string) error {
	var age time.Duration
	if olderThan != "" {
		d, err := history.ParseAge(olderThan)
		if err != nil || d <= 0 {
			return usagef("--older-than: %q is not a positive length of time (90d, 12h)", olderThan)
		}
		age = d
	} else {
		cfg, err := config.Load(fs, a.env)
		if err != nil {
			return err
		}
		age = cfg.History.Retention
	}
	c, err := newClient(fs, a.env)
	if err != nil {
		return err
	}
	res, err := c.PruneHistory(ctx, age)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "removed %d sessions and %d turns older than %s\n", res.Sessions, res.Turns, ageText(age))
	return nil
}

// ageText shows an age in days when it is whole days.
func ageText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// usageOptions are the flags of `agentbridge usage`.
type usageOptions struct {
	filter    historyFilter
	by, split string
	tz        string
	json, csv bool
}

func newUsageCmd(a *app) *cobra.Command {
	var o usageOptions
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "sum the tokens, estimated cost and time of the sessions by day, project, model or harness",
		Long: `Sum, from the bridge's history, what the sessions of a time range (default
the last 30 days) used: TOKENS (input, output and cache), EST. COST (by the
bridge's price table: an estimate, never a bill; "-" where no model's price
is known), SESSIONS, TURNS (counted on the day they started), ACTIVE (the
turns' summed length) and WAITING (the time they waited for you), one row
per day (in --tz, default local time), project, model or harness (--by),
optionally split by a second key (--split), with a TOTAL row.

  agentbridge usage --by model --since 7d
  agentbridge usage --by day --split harness --tz UTC`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.usage(cmd.Context(), cmd.Flags(), o)
		},
	}
	fs := cmd.Flags()
	clientFlags(fs)
	o.filter.register(fs, "30d")
	o.filter.complete(cmd)
	keys := strings.Join(agentbridge.UsageKeys, ", ")
	fs.StringVar(&o.by, "by", agentbridge.UsageByDay, "sum by `key`: "+keys)
	fs.StringVar(&o.split, "split", "", "split each row by a second `key`: "+keys)
	fs.StringVar(&o.tz, "tz", "", "the IANA time `zone` days are counted in (default the bridge's local zone)")
	fs.BoolVar(&o.json, "json", false, "print the table as JSON, as GET /v1/usage answers it")
	fs.BoolVar(&o.csv, "csv", false, "print the table's rows as CSV")
	mustComplete(cmd, "by", fixedCompletions(agentbridge.UsageKeys...))
	mustComplete(cmd, "split", fixedCompletions(agentbridge.UsageKeys...))
	return cmd
}

func (a *app) usage(ctx context.Context, fs *pflag.FlagSet, o usageOptions) error {
	if o.json && o.csv {
		return usagef("--json and --csv: give one")
	}
	keys := strings.Join(agentbridge.UsageKeys, ", ")
	if !slices.Contains(agentbridge.UsageKeys, o.by) {
		return usagef("--by: %q is not one of %s", o.by, keys)
	}
	if o.split != "" && (!slices.Contains(agentbridge.UsageKeys, o.split) || o.split == o.by) {
		return usagef("--split: %q is not one of %s other than --by", o.split, keys)
	}
	if o.tz != "" {
		if _, err := time.LoadLocation(o.tz); err != nil || o.tz == "Local" {
			return usagef("--tz: %q is not an IANA time zone (Europe/Paris, UTC)", o.tz)
		}
	}
	hf, err := o.filter.filter(time.Now())
	if err != nil {
		return err
	}
	q := client.UsageQuery{HistoryFilter: hf, By: o.by, Split: o.split, TZ: o.tz}
	c, err := newClient(fs, a.env)
	if err != nil {
		return err
	}
	if o.csv {
		b, err := c.UsageCSV(ctx, q)
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(b)
		return err
	}
	t, err := c.Usage(ctx, q)
	if err != nil {
		return err
	}
	if o.json {
		b, err := json.MarshalIndent(t, "", "  ")
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(text.EscapeJSON(append(b, '\n')))
		return err
	}
	if len(t.Rows) == 0 {
		fmt.Fprintln(a.stderr, "no usage in the history for this range")
		return nil
	}
	return writeUsageTable(a.stdout, t, envGet(a.env, "HOME"))
}

// writeUsageTable prints a usage table: a row per key (and split key),
// then the TOTAL row, then the footnote on costs.
func writeUsageTable(w io.Writer, t agentbridge.UsageTable, home string) error {
	head := []string{strings.ToUpper(t.By)}
	if t.Split != "" {
		head = append(head, strings.ToUpper(t.Split))
	}
	head = append(head, "TOKENS", "EST. COST", "SESSIONS", "TURNS", "ACTIVE", "WAITING")
	rows := [][]string{head}
	asOf := ""
	key := func(by, k string) string {
		if by == agentbridge.UsageByProject {
			k = tilde(k, home)
		}
		return cell(k)
	}
	add := func(r agentbridge.UsageRow, first string) {
		row := []string{first}
		if t.Split != "" {
			row = append(row, key(t.Split, r.SplitKey))
			if first == "TOTAL" {
				row[1] = ""
			}
		}
		row = append(row, tokens(r.Tokens), estCost(r.Cost), strconv.Itoa(r.Sessions), strconv.Itoa(r.Turns), span(r.ActiveMs), span(r.WaitingMs))
		rows = append(rows, row)
		asOf = pricesAsOf(asOf, r.Cost)
	}
	for _, r := range t.Rows {
		add(r, key(t.By, r.Key))
	}
	add(t.Total, "TOTAL")
	return writeAligned(w, rows, costNote(asOf))
}

// exportedSessions counts the sessions of an export (GET /v1/history's
// answer as JSON or CSV); -1 when it cannot be read.
func exportedSessions(b []byte, format string) int {
	if format == "json" {
		var body struct {
			Sessions []json.RawMessage `json:"sessions"`
		}
		if json.Unmarshal(b, &body) != nil {
			return -1
		}
		return len(body.Sessions)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) == 0 {
		return -1
	}
	seen := map[[3]string]bool{}
	for _, r := range rows[1:] {
		if len(r) >= 3 {
			seen[[3]string{r[0], r[1], r[2]}] = true // host, source, session_id
		}
	}
	return len(seen)
}
