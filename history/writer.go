package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// maxStates bounds the per-session state the writer keeps between
// transactions; past it, the state of sessions the last transaction did
// not touch is dropped (it is read again from the database when needed),
// but for a session whose fold's totals differ from its rows' sum (its
// fold was built anew: Recount), which the database does not hold.
const maxStates = 4096

// maxSpare bounds the queue's spare buffer, which Record appends to while
// the writer writes the other: a queue that grew past it is not kept.
const maxSpare = 4096

// maxFreshLost bounds the sessions whose dropped Fresh fact is remembered.
const maxFreshLost = 4096

// maxProjects bounds the cache of project roots by working directory.
const maxProjects = 4096

var _ hub.Recorder = (*Store)(nil)

// Record queues facts for the writer: it keeps what the writer needs of
// them (queued: their strings shared, not copied) under a mutex and wakes
// the writer, in time linear in the facts, and never blocks, does I/O or
// waits for the disk (hub.Recorder). When the facts would take the memory
// of the facts not yet written past MaxQueueBytes, they are all dropped
// and counted; the writer logs the loss once per overflow.
func (s *Store) Record(facts []hub.Fact) {
	if len(facts) == 0 {
		return
	}
	s.mu.Lock()
	size := handOutSize(s.last, facts)
	if s.queued+s.flying+size > s.maxQueue {
		s.lost += len(facts)
		for i := range facts {
			if facts[i].Fresh {
				s.lostFresh(&facts[i])
			}
		}
		s.mu.Unlock()
		s.dropped.Add(float64(len(facts)))
		return
	}
	s.queue, s.last = queue(slices.Grow(s.queue, len(facts)), s.last, facts)
	s.queued += size
	s.mu.Unlock()
	s.signal()
}

// lostFresh notes that a Fresh fact of f's session was dropped where the
// queue ends now: its next fact kept is written as Fresh (see
// Store.freshLost). s.mu must be held.
func (s *Store) lostFresh(f *hub.Fact) {
	k := sessionKey{f.Host, f.Source, f.SessionID}
	if _, ok := s.freshLost[k]; !ok && len(s.freshLost) >= maxFreshLost {
		return
	}
	if s.freshLost == nil {
		s.freshLost = map[sessionKey]int{}
	}
	s.freshLost[k] = len(s.queue) // the latest wins: a retelling replaces all before it
}

// Answered records that the session's open wait was answered through the
// bridge at (epoch ms): the wait, when it ends, is answered
// agentbridge.WaitFromBridge. When none is open (its end was written
// first), the session's last wait that ended at or after at and was
// answered plainly becomes from-bridge. It queues like Record.
func (s *Store) Answered(host, source, sessionID string, at int64) {
	s.push(item{answered: &answeredMark{host, source, sessionID, at}})
}

// Sync returns once everything recorded before it is written (or its
// write failed: the error), or when ctx ends. It needs Run running.
func (s *Store) Sync(ctx context.Context) error {
	done := make(chan error, 1)
	s.push(item{sync: done})
	select {
	case s.now <- struct{}{}:
	default:
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) push(it item) {
	s.mu.Lock()
	s.queue = append(s.queue, it)
	s.mu.Unlock()
	s.signal()
}

func (s *Store) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run is the writer: it sleeps until something is recorded, then, after
// writeDelay (at once for a Sync), writes everything queued in one
// transaction; it prunes sessions older than the retention when it starts
// and every 24 hours after (a timer). When ctx ends it writes what is
// still queued and returns nil; an error only when it is already running.
func (s *Store) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("history: already running")
	}
	s.running = true
	s.mu.Unlock()
	s.retain(ctx)
	prune := time.NewTimer(pruneEvery)
	defer prune.Stop()
	delay := time.NewTimer(writeDelay) // armed by a wake
	delay.Stop()
	defer delay.Stop()
	armed := false
	for {
		select {
		case <-ctx.Done():
			s.flush(ctx)
			return nil
		case <-s.wake:
			if !armed {
				delay.Reset(writeDelay)
				armed = true
			}
		case <-delay.C:
			armed = false
			s.flush(ctx)
		case <-s.now:
			if armed {
				delay.Stop()
				armed = false
			}
			s.flush(ctx)
		case <-prune.C:
			s.retain(ctx)
			prune.Reset(pruneEvery)
		}
	}
}

// retain prunes what the retention lets go.
func (s *Store) retain(ctx context.Context) {
	if s.o.Retention < 0 {
		return
	}
	res, err := s.Prune(ctx, s.o.Now().Add(-s.o.Retention))
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.Warn("history: retention prune failed", "err", err)
	case res.Sessions > 0:
		s.log.Info("history: pruned sessions past the retention", "sessions", res.Sessions, "turns", res.Turns)
	}
}

// flush writes the queue.
func (s *Store) flush(ctx context.Context) {
	q, marks, lost := s.take()
	defer s.giveBack(q)
	if s.flushed != nil {
		defer s.flushed()
	}
	switch {
	case lost > 0 && !s.overflow:
		s.overflow = true // once per overflow: the counter has every loss
		s.log.Warn("history: the write queue was full; facts dropped", "facts", lost)
	case lost == 0:
		s.overflow = false
	}
	if len(q) == 0 {
		return
	}
	s.wmu.Lock()
	err := s.write(context.WithoutCancel(ctx), q, marks) // a write begun is finished, even at shutdown
	s.wmu.Unlock()
	s.carry(marks)
	n := 0
	for _, it := range q {
		if it.sync != nil {
			it.sync <- err
		} else if it.answered == nil {
			n++
		}
	}
	if err != nil {
		s.failed.Inc()
		s.log.Error("history: a write failed; its facts are lost", "facts", n, "err", err)
		return
	}
	s.written.Add(float64(n))
}

// take takes the queue (and the count of facts lost since the last take);
// Record appends to the spare buffer meanwhile. The queue's memory counts
// as the writer's (flying) until giveBack, or the next take (the writer
// took it, so it is done with the one before).
func (s *Store) take() ([]item, map[sessionKey]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, marks, lost := s.queue, s.freshLost, s.lost
	s.queue, s.spare, s.freshLost, s.lost = s.spare, nil, nil, 0
	s.flying, s.queued = s.queued, 0
	return q, marks, lost
}

// carry keeps the marks of lost Fresh facts whose session had no fact
// after the loss in the queue just written: its first fact of the next
// queue is Fresh (unless a later loss marked a later place).
func (s *Store) carry(marks map[sessionKey]int) {
	if len(marks) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range marks {
		if _, later := s.freshLost[k]; !later && len(s.freshLost) < maxFreshLost {
			if s.freshLost == nil {
				s.freshLost = map[sessionKey]int{}
			}
			s.freshLost[k] = 0
		}
	}
}

// giveBack releases a written queue's memory and keeps the queue,
// emptied, as the next spare buffer, unless it grew past maxSpare.
func (s *Store) giveBack(q []item) {
	keep := cap(q) <= maxSpare
	if keep {
		clear(q) // no fact kept alive by the spare
	}
	s.mu.Lock()
	s.flying = 0
	if keep {
		s.spare = q[:0]
	}
	s.mu.Unlock()
}

// write folds the items into the database in one transaction. On error
// the transaction is rolled back and the writer's state dropped (it is
// read again from the database).
func (s *Store) write(ctx context.Context, q []item, marks map[sessionKey]int) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		s.sessions = map[sessionKey]*sessionState{}
		return fmt.Errorf("begin: %w", err)
	}
	w := &txn{Store: s, ctx: ctx, tx: tx, touched: map[*sessionState]bool{}, stmts: map[string]*sql.Stmt{}}
	err = w.apply(q, marks)
	if err == nil {
		err = w.finish()
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		tx.Rollback() //nolint:errcheck // the error that matters is err
		s.sessions = map[sessionKey]*sessionState{}
		return err
	}
	if len(s.sessions) > maxStates {
		for k, st := range s.sessions {
			if !w.touched[st] && st.seen == st.usage { // else the fold counted anew: the rows cannot say so
				delete(s.sessions, k)
			}
		}
	}
	return nil
}

type sessionKey struct{ host, source, id string }

// sessionState is what the writer knows of a session between its facts:
// its row, its open turn, waits and tools, and its usage totals so far.
type sessionState struct {
	sid                        int64
	harness, title, model, cwd string
	project                    string
	startedAt, lastAt          int64
	ended                      sql.NullString // JSON of agentbridge.Ended
	nextTurn                   int
	turn                       *openTurn
	tools                      map[string]int64  // open tool id → its row
	waits                      []openWait        // in the order they started
	usage                      agentbridge.Usage // the sum of its usage rows
	seen                       agentbridge.Usage // the totals of the hub's fold at its last fact
	checked                    bool              // its row was seen in this transaction
	turnDirty                  bool              // the open turn's model or tools changed
}

type openTurn struct {
	idx   int
	model string
	tools int
}

type openWait struct {
	wid    int64
	id     string
	at     int64
	bridge bool // answered through the bridge
}

// txn is one write transaction.
type txn struct {
	*Store
	ctx     context.Context
	tx      *sql.Tx
	touched map[*sessionState]bool
	stmts   map[string]*sql.Stmt // closed with the transaction
}

// prepared returns the transaction's statement of query, prepared at its
// first use: a busy transaction (a rescan's) parses each query once.
func (w *txn) prepared(query string) (*sql.Stmt, error) {
	if st := w.stmts[query]; st != nil {
		return st, nil
	}
	st, err := w.tx.PrepareContext(w.ctx, query)
	if err != nil {
		return nil, err
	}
	w.stmts[query] = st
	return st, nil
}

func (w *txn) exec(query string, args ...any) (sql.Result, error) {
	st, err := w.prepared(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(w.ctx, args...)
}

// query runs a query of rows.
func (w *txn) query(query string, args ...any) (*sql.Rows, error) {
	st, err := w.prepared(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(w.ctx, args...)
}

// one runs a query of one row into dest.
func (w *txn) one(query string, args []any, dest ...any) error {
	st, err := w.prepared(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(w.ctx, args...).Scan(dest...)
}

// apply folds the queue's items. A fact kept after a Fresh fact of its
// session was dropped (marks: the place of the loss) is written as Fresh:
// what the session's journal told before the retelling goes, instead of
// being doubled by what is kept of the retelling; the mark is then spent.
func (w *txn) apply(q []item, marks map[sessionKey]int) error {
	for i, it := range q {
		var err error
		switch {
		case it.answered != nil:
			err = w.answered(it.answered)
		case it.sync == nil:
			if len(marks) > 0 {
				k := it.fact.key()
				if at, ok := marks[k]; ok && i >= at {
					it.fact.fresh = true
					delete(marks, k)
				}
			}
			err = w.fact(&it.fact)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// finish writes the rows of the sessions the transaction changed.
func (w *txn) finish() error {
	for st := range w.touched {
		if _, err := w.exec(`UPDATE sessions SET harness=?, title=?, model=?, cwd=?, project=?,
			started_at=?, last_at=?, ended=? WHERE sid=?`,
			st.harness, st.title, st.model, st.cwd, st.project, st.startedAt, st.lastAt, st.ended, st.sid); err != nil {
			return fmt.Errorf("update a session: %w", err)
		}
		if t := st.turn; t != nil && st.turnDirty {
			if _, err := w.exec(`UPDATE turns SET model=?, tools=? WHERE sid=? AND idx=?`, t.model, t.tools, st.sid, t.idx); err != nil {
				return fmt.Errorf("update a turn: %w", err)
			}
		}
		st.checked, st.turnDirty = false, false
	}
	return nil
}

// state returns the session's state, read from the database (and its row
// made when missing) the first time the writer meets it, and checked once
// per transaction (a prune may have removed it). create false: nil for a
// session the history does not hold. A session pruned while the hub still
// folds it starts again from what its fold counted so far: only what it
// uses after the prune is added.
func (w *txn) state(k sessionKey, create bool) (*sessionState, error) {
	st := w.sessions[k]
	var pruned *sessionState
	if st != nil && !st.checked {
		var one int
		err := w.one("SELECT 1 FROM sessions WHERE sid=?", []any{st.sid}, &one)
		switch {
		case errors.Is(err, sql.ErrNoRows) && !create:
			return nil, nil // its state stays for the fact that makes it again
		case errors.Is(err, sql.ErrNoRows):
			delete(w.sessions, k)
			pruned, st = st, nil
		case err != nil:
			return nil, fmt.Errorf("check a session: %w", err)
		}
	}
	if st == nil {
		var err error
		if st, err = w.load(k, create); err != nil || st == nil {
			return nil, err
		}
		if pruned != nil {
			st.seen = pruned.seen
		}
		w.sessions[k] = st
	}
	st.checked = true
	w.touched[st] = true
	return st, nil
}

// load reads a session's state from the database.
func (w *txn) load(k sessionKey, create bool) (*sessionState, error) {
	st := &sessionState{tools: map[string]int64{}}
	err := w.one(`SELECT sid, harness, title, model, cwd, project, started_at, last_at, ended
		FROM sessions WHERE host=? AND source=? AND id=?`, []any{k.host, k.source, k.id},
		&st.sid, &st.harness, &st.title, &st.model, &st.cwd, &st.project, &st.startedAt, &st.lastAt, &st.ended)
	switch {
	case errors.Is(err, sql.ErrNoRows) && !create:
		return nil, nil
	case errors.Is(err, sql.ErrNoRows):
		err = w.one(`INSERT INTO sessions (host, source, id) VALUES (?, ?, ?) RETURNING sid`, []any{k.host, k.source, k.id}, &st.sid)
		if err != nil {
			return nil, fmt.Errorf("add a session: %w", err)
		}
		return st, nil
	case err != nil:
		return nil, fmt.Errorf("read a session: %w", err)
	}
	if err := w.loadOpen(st); err != nil {
		return nil, fmt.Errorf("read a session's state: %w", err)
	}
	return st, nil
}

func (w *txn) loadOpen(st *sessionState) error {
	var next int
	if err := w.one("SELECT COALESCE(MAX(idx)+1, 0) FROM turns WHERE sid=?", []any{st.sid}, &next); err != nil {
		return err
	}
	st.nextTurn = next
	t := openTurn{}
	err := w.one("SELECT idx, model, tools FROM turns WHERE sid=? AND idx=? AND ended_at IS NULL",
		[]any{st.sid, next - 1}, &t.idx, &t.model, &t.tools)
	if err == nil {
		st.turn = &t
	} else if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	rows, err := w.query("SELECT tid, tool_id FROM tools WHERE sid=? AND ended_at IS NULL", st.sid)
	if err != nil {
		return err
	}
	for rows.Next() {
		var tid int64
		var id string
		if err := rows.Scan(&tid, &id); err != nil {
			rows.Close()
			return err
		}
		st.tools[id] = tid
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	if err := w.openWaits(st); err != nil {
		return err
	}
	u := &st.usage
	if err := w.one(`SELECT COALESCE(SUM(input),0), COALESCE(SUM(output),0),
		COALESCE(SUM(cache_read),0), COALESCE(SUM(cache_write),0) FROM usage WHERE sid=?`, []any{st.sid},
		&u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens); err != nil {
		return err
	}
	st.seen = st.usage // as when the fold was not built anew since the rows began
	return nil
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	return errors.Join(err, rows.Close())
}

// fresh forgets what the session's journal told before: its turns, tools,
// usage and journal-made waits (a hook's waits stay).
func (w *txn) fresh(st *sessionState) error {
	for _, q := range []string{
		"DELETE FROM turns WHERE sid=?",
		"DELETE FROM tools WHERE sid=?",
		"DELETE FROM usage WHERE sid=?",
		"DELETE FROM waits WHERE sid=? AND journal=1",
	} {
		if _, err := w.exec(q, st.sid); err != nil {
			return fmt.Errorf("replace a session's journal rows: %w", err)
		}
	}
	st.nextTurn, st.turn, st.turnDirty = 0, nil, false
	clear(st.tools)
	st.usage, st.seen = agentbridge.Usage{}, agentbridge.Usage{}
	if err := w.openWaits(st); err != nil {
		return fmt.Errorf("read a session's waits: %w", err)
	}
	return nil
}

// openWaits reads the session's open waits (in the order they started)
// into its state.
func (w *txn) openWaits(st *sessionState) error {
	st.waits = st.waits[:0]
	rows, err := w.query("SELECT wid, wait_id, started_at FROM waits WHERE sid=? AND ended_at IS NULL ORDER BY wid", st.sid)
	if err != nil {
		return err
	}
	for rows.Next() {
		var ow openWait
		if err := rows.Scan(&ow.wid, &ow.id, &ow.at); err != nil {
			rows.Close()
			return err
		}
		st.waits = append(st.waits, ow)
	}
	return closeRows(rows)
}
