package history

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge"
)

// ErrQuery is returned (wrapped) for a query that asks for something the
// history cannot answer (an unknown key of a usage table).
var ErrQuery = errors.New("history: invalid query")

// filter returns the conditions of q on the sessions (alias s), without
// its time range.
func filter(q Query) (string, []any) {
	var conds []string
	var args []any
	eq := func(col, v string) {
		if v != "" {
			conds = append(conds, "s."+col+" = ?")
			args = append(args, v)
		}
	}
	eq("project", q.Project)
	eq("harness", q.Harness)
	eq("source", q.Source)
	switch q.Host {
	case "":
	case agentbridge.LocalHost:
		conds = append(conds, "s.host = ''")
	default:
		eq("host", q.Host)
	}
	switch q.Outcome {
	case "":
	case string(agentbridge.StatusRunning):
		conds = append(conds, "EXISTS (SELECT 1 FROM turns t WHERE t.sid = s.sid AND t.ended_at IS NULL)")
	default:
		conds = append(conds, "EXISTS (SELECT 1 FROM turns t WHERE t.sid = s.sid AND t.outcome = ?)")
		args = append(args, q.Outcome)
	}
	if len(conds) == 0 {
		return "1", nil
	}
	return strings.Join(conds, " AND "), args
}

// rangeMs returns the query's range in epoch ms; to is MaxInt64 when open.
func rangeMs(q Query) (from, to int64) {
	to = 1<<63 - 1
	if !q.From.IsZero() {
		from = q.From.UnixMilli()
	}
	if !q.To.IsZero() {
		to = q.To.UnixMilli()
	}
	return from, to
}

// Sessions lists the sessions whose span meets [q.From, q.To) (Query) that match
// q's filters, newest (last event) first, at most q.Limit, each with its
// last q.Turns turns, their waits, usage and cost. ActiveMs and WaitingMs
// sum the session's ended turns and waits (all of them, not only the
// turns listed); a wait that started outside any turn counts in WaitingMs
// but is listed under no turn.
func (s *Store) Sessions(ctx context.Context, q Query) ([]agentbridge.HistorySession, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	turns := q.Turns
	if turns <= 0 {
		turns = DefaultTurns
	}
	from, to := rangeMs(q)
	cond, args := filter(q)
	tx, err := s.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("history: list sessions: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	rows, err := tx.QueryContext(ctx, `SELECT s.sid, s.host, s.source, s.id, s.harness, s.title, s.model, s.cwd,
		s.project, s.started_at, s.last_at, s.ended FROM sessions s
		WHERE `+cond+` AND s.last_at >= ? AND s.started_at < ? ORDER BY s.last_at DESC, s.sid DESC LIMIT ?`,
		append(args, from, to, limit)...)
	if err != nil {
		return nil, fmt.Errorf("history: list sessions: %w", err)
	}
	var out []agentbridge.HistorySession
	var sids []int64
	for rows.Next() {
		var h agentbridge.HistorySession
		var sid int64
		var ended sql.NullString
		if err := rows.Scan(&sid, &h.Host, &h.Source, &h.ID, &h.Harness, &h.Title, &h.Model, &h.Cwd,
			&h.Project, &h.StartedAt, &h.LastAt, &ended); err != nil {
			rows.Close()
			return nil, fmt.Errorf("history: list sessions: %w", err)
		}
		if ended.Valid {
			h.Ended = new(agentbridge.Ended)
			if json.Unmarshal([]byte(ended.String), h.Ended) != nil {
				h.Ended = nil
			}
		}
		out = append(out, h)
		sids = append(sids, sid)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("history: list sessions: %w", err)
	}
	for i := range out {
		if err := s.detail(ctx, tx, sids[i], &out[i], turns); err != nil {
			return nil, fmt.Errorf("history: list sessions: %w", err)
		}
	}
	return out, nil
}

// detail fills a session's turns, waits, usage and cost.
func (s *Store) detail(ctx context.Context, tx *sql.Tx, sid int64, h *agentbridge.HistorySession, limit int) error {
	rows, err := tx.QueryContext(ctx, `SELECT idx, turn_id, started_at, COALESCE(ended_at, 0), outcome, model, tools
		FROM turns WHERE sid=? ORDER BY idx DESC LIMIT ?`, sid, limit)
	if err != nil {
		return err
	}
	h.Turns = []agentbridge.HistoryTurn{}
	for rows.Next() {
		var t agentbridge.HistoryTurn
		if err := rows.Scan(&t.Index, &t.ID, &t.StartedAt, &t.EndedAt, &t.Outcome, &t.Model, &t.Tools); err != nil {
			rows.Close()
			return err
		}
		t.Waits = []agentbridge.HistoryWait{}
		h.Turns = append(h.Turns, t)
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	slices.Reverse(h.Turns)
	byIdx := map[int]*agentbridge.HistoryTurn{}
	for i := range h.Turns {
		byIdx[h.Turns[i].Index] = &h.Turns[i]
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(`+spanMs("turns")+`), 0) FROM turns WHERE sid=?`,
		sid).Scan(&h.ActiveMs); err != nil {
		return err
	}
	rows, err = tx.QueryContext(ctx, `SELECT turn, wait_id, state, reason, started_at, COALESCE(ended_at, 0),
		ended_at IS NOT NULL, answered FROM waits WHERE sid=? ORDER BY started_at, wid`, sid)
	if err != nil {
		return err
	}
	for rows.Next() {
		var w agentbridge.HistoryWait
		var turn int
		var ended bool
		if err := rows.Scan(&turn, &w.ID, &w.State, &w.Reason, &w.StartedAt, &w.EndedAt, &ended, &w.Answered); err != nil {
			rows.Close()
			return err
		}
		if ended && w.StartedAt > 0 && w.EndedAt >= w.StartedAt {
			h.WaitingMs += w.EndedAt - w.StartedAt
		}
		if t := byIdx[turn]; t != nil {
			t.Waits = append(t.Waits, w)
		}
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	rows, err = tx.QueryContext(ctx, `SELECT turn, model, SUM(input), SUM(output), SUM(cache_read), SUM(cache_write)
		FROM usage WHERE sid=? GROUP BY turn, model`, sid)
	if err != nil {
		return err
	}
	var all tally
	per := map[int]*tally{}
	for rows.Next() {
		var turn int
		var model string
		var u agentbridge.Usage
		if err := rows.Scan(&turn, &model, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens); err != nil {
			rows.Close()
			return err
		}
		if model == "" {
			model = h.Model
		}
		h.Usage = h.Usage.Add(u)
		s.prices.add(&all, model, u)
		if t := byIdx[turn]; t != nil {
			t.Usage = t.Usage.Add(u)
			if per[turn] == nil {
				per[turn] = &tally{}
			}
			s.prices.add(per[turn], model, u)
		}
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	h.Cost = all.cost()
	for idx, tl := range per {
		byIdx[idx].Cost = tl.cost()
	}
	return nil
}

// Usage sums the usage of the sessions q selects, in [q.From, q.To), by
// q.By (and q.Split): tokens and cost where the model call was recorded,
// turns (and their active time) where they started, waiting time where
// the wait started; only ended turns and waits add time. Rows are sorted
// by key, then split key; keys with nothing in the range are not listed.
// A row's Sessions counts the sessions that added something to it.
// q.Limit and q.Turns do not apply.
func (s *Store) Usage(ctx context.Context, q UsageQuery) (agentbridge.UsageTable, error) {
	if !slices.Contains(agentbridge.UsageKeys, q.By) {
		return agentbridge.UsageTable{}, fmt.Errorf("%w: by %q (one of %s)", ErrQuery, q.By, strings.Join(agentbridge.UsageKeys, ", "))
	}
	if q.Split != "" && (q.Split == q.By || !slices.Contains(agentbridge.UsageKeys, q.Split)) {
		return agentbridge.UsageTable{}, fmt.Errorf("%w: split %q (another of %s)", ErrQuery, q.Split, strings.Join(agentbridge.UsageKeys, ", "))
	}
	loc := q.Loc
	if loc == nil {
		loc = time.Local
	}
	from, to := rangeMs(q.Query)
	u := &usageSum{by: q.By, split: q.Split, loc: loc, prices: &s.prices, rows: map[[2]string]*usageAcc{},
		total: usageAcc{sids: map[int64]bool{}}}
	cond, args := filter(q.Query)
	rangeArgs := append(args, from, to)
	tx, err := s.read(ctx)
	if err != nil {
		return agentbridge.UsageTable{}, fmt.Errorf("history: sum usage: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	// Rows are summed in SQL by session, quarter of an hour and model: a
	// quarter lies in one day of every time zone (their offsets are
	// multiples of 15 minutes), so the days come out exact.
	if err := s.sumRows(ctx, tx, `SELECT u.sid, u.at / `+quarter+` * `+quarter+`, u.model, s.project, s.harness, s.model,
		SUM(u.input), SUM(u.output), SUM(u.cache_read), SUM(u.cache_write) FROM usage u JOIN sessions s ON s.sid = u.sid
		WHERE `+cond+` AND u.at >= ? AND u.at < ? GROUP BY u.sid, u.at / `+quarter+`, u.model`, rangeArgs, func(c contribution, rows *sql.Rows) error {
		var in agentbridge.Usage
		if err := rows.Scan(&c.sid, &c.at, &c.model, &c.project, &c.harness, &c.sessionModel,
			&in.InputTokens, &in.OutputTokens, &in.CacheReadTokens, &in.CacheWriteTokens); err != nil {
			return err
		}
		u.add(c, func(a *usageAcc, model string) {
			a.row.Usage = a.row.Usage.Add(in)
			u.prices.add(&a.tally, model, in)
		})
		return nil
	}); err != nil {
		return agentbridge.UsageTable{}, err
	}
	if err := s.sumRows(ctx, tx, `SELECT t.sid, t.started_at / `+quarter+` * `+quarter+`, t.model, s.project, s.harness, s.model,
		COUNT(*), SUM(`+spanMs("t")+`) FROM turns t JOIN sessions s ON s.sid = t.sid
		WHERE `+cond+` AND t.started_at >= ? AND t.started_at < ? GROUP BY t.sid, t.started_at / `+quarter+`, t.model`,
		rangeArgs, func(c contribution, rows *sql.Rows) error {
			var n int
			var ms int64
			if err := rows.Scan(&c.sid, &c.at, &c.model, &c.project, &c.harness, &c.sessionModel, &n, &ms); err != nil {
				return err
			}
			u.add(c, func(a *usageAcc, _ string) {
				a.row.Turns += n
				a.row.ActiveMs += ms
			})
			return nil
		}); err != nil {
		return agentbridge.UsageTable{}, err
	}
	if err := s.sumRows(ctx, tx, `SELECT w.sid, w.started_at / `+quarter+` * `+quarter+`, COALESCE(t.model, ''), s.project, s.harness, s.model,
		SUM(`+spanMs("w")+`) FROM waits w JOIN sessions s ON s.sid = w.sid
		LEFT JOIN turns t ON t.sid = w.sid AND t.idx = w.turn
		WHERE `+cond+` AND w.started_at >= ? AND w.started_at < ? GROUP BY w.sid, w.started_at / `+quarter+`, t.model`,
		rangeArgs, func(c contribution, rows *sql.Rows) error {
			var ms int64
			if err := rows.Scan(&c.sid, &c.at, &c.model, &c.project, &c.harness, &c.sessionModel, &ms); err != nil {
				return err
			}
			u.add(c, func(a *usageAcc, _ string) { a.row.WaitingMs += ms })
			return nil
		}); err != nil {
		return agentbridge.UsageTable{}, err
	}
	tz := loc.String()
	tab := agentbridge.UsageTable{By: q.By, Split: q.Split, TZ: tz, Rows: []agentbridge.UsageRow{}}
	if !q.From.IsZero() {
		tab.From = from
	}
	if !q.To.IsZero() {
		tab.To = to
	}
	for _, a := range u.rows {
		tab.Rows = append(tab.Rows, a.finish())
	}
	slices.SortFunc(tab.Rows, func(a, b agentbridge.UsageRow) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.SplitKey, b.SplitKey))
	})
	tab.Total = u.total.finish()
	return tab, nil
}

// spanMs is the SQL of the length in ms of the turn or wait of alias a: 0
// while it is open, or when its start is unknown (0) or after its end.
func spanMs(a string) string {
	return "CASE WHEN " + a + ".started_at > 0 AND " + a + ".ended_at >= " + a + ".started_at THEN " +
		a + ".ended_at - " + a + ".started_at ELSE 0 END"
}

// quarter is the bucket, in ms, usage is summed in before its rows are
// keyed: a quarter of an hour.
const quarter = "900000"

// contribution is one usage, turn or wait row to sum, with its session's
// keys.
type contribution struct {
	sid                                   int64
	at                                    int64
	model, project, harness, sessionModel string
}

type usageAcc struct {
	row   agentbridge.UsageRow
	tally tally
	sids  map[int64]bool
}

func (a *usageAcc) finish() agentbridge.UsageRow {
	r := a.row
	r.Tokens = tokens(r.Usage)
	r.Cost = a.tally.cost()
	r.Sessions = len(a.sids)
	return r
}

type usageSum struct {
	by, split string
	loc       *time.Location
	prices    *prices
	rows      map[[2]string]*usageAcc
	total     usageAcc
}

func (u *usageSum) key(by string, c *contribution, model string) string {
	switch by {
	case agentbridge.UsageByDay:
		return time.UnixMilli(c.at).In(u.loc).Format(time.DateOnly)
	case agentbridge.UsageByProject:
		return c.project
	case agentbridge.UsageByModel:
		return model
	case agentbridge.UsageByHarness:
		return c.harness
	}
	return ""
}

// add applies f to the contribution's row and to the total.
func (u *usageSum) add(c contribution, f func(a *usageAcc, model string)) {
	model := cmp.Or(c.model, c.sessionModel)
	k := [2]string{u.key(u.by, &c, model), ""}
	if u.split != "" {
		k[1] = u.key(u.split, &c, model)
	}
	a := u.rows[k]
	if a == nil {
		a = &usageAcc{row: agentbridge.UsageRow{Key: k[0], SplitKey: k[1]}, sids: map[int64]bool{}}
		u.rows[k] = a
	}
	f(a, model)
	a.sids[c.sid] = true
	f(&u.total, model)
	u.total.sids[c.sid] = true
}

// sumRows runs a query and hands each row to scan.
func (s *Store) sumRows(ctx context.Context, tx *sql.Tx, query string, args []any, scan func(contribution, *sql.Rows) error) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("history: sum usage: %w", err)
	}
	for rows.Next() {
		if err := scan(contribution{}, rows); err != nil {
			rows.Close()
			return fmt.Errorf("history: sum usage: %w", err)
		}
	}
	if err := closeRows(rows); err != nil {
		return fmt.Errorf("history: sum usage: %w", err)
	}
	return nil
}

// read begins a read transaction: every query of an answer reads the same
// snapshot of the database (WAL), whatever the writer commits meanwhile.
func (s *Store) read(ctx context.Context) (*sql.Tx, error) {
	return s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
}

// Prune removes the sessions whose last event is before before (an
// undated session, last event 0, too) with their turns, waits, tools and
// usage, in one transaction. The freed pages go back to the file system
// by PRAGMA incremental_vacuum, never a VACUUM (which would rewrite the
// whole file and block the writer).
func (s *Store) Prune(ctx context.Context, before time.Time) (PruneResult, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	cut := before.UnixMilli()
	var res PruneResult
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("history: prune: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: no-op
	const old = "sid IN (SELECT sid FROM sessions WHERE last_at < ?)"
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM turns WHERE "+old, cut).Scan(&res.Turns); err != nil {
		return PruneResult{}, fmt.Errorf("history: prune: %w", err)
	}
	for _, t := range []string{"turns", "waits", "tools", "usage"} {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE "+old, cut); err != nil {
			return PruneResult{}, fmt.Errorf("history: prune: %w", err)
		}
	}
	r, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE last_at < ?", cut)
	if err != nil {
		return PruneResult{}, fmt.Errorf("history: prune: %w", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return PruneResult{}, fmt.Errorf("history: prune: %w", err)
	}
	res.Sessions = int(n)
	if err := tx.Commit(); err != nil {
		return PruneResult{}, fmt.Errorf("history: prune: %w", err)
	}
	// The writer's state of a pruned session goes at its next fact (state
	// checks its row); the others keep theirs (what the hub's folds
	// counted, which the rows do not say).
	if n > 0 {
		if _, err := s.wdb.ExecContext(ctx, "PRAGMA incremental_vacuum"); err != nil {
			s.log.Warn("history: incremental vacuum failed", "err", err)
		}
	}
	return res, nil
}
