package history

// The fold of one fact into the database: a session's turns, waits, tools
// and usage, as txn.apply hands each queued fact (writer.go keeps the
// queue, the transactions and the per-session state they read).

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/project"
)

// fact folds one fact.
func (w *txn) fact(f *queued) error {
	st, err := w.state(f.key(), true)
	if err != nil {
		return err
	}
	if f.fresh {
		if err := w.fresh(st); err != nil {
			return err
		}
	}
	t := f.at
	if t == 0 || f.kind == kindNone && st.lastAt != 0 {
		// Undated, or a session given whole again (a reset, a remote's
		// upsert: no new activity): the session's last known time.
		t = st.lastAt
	}
	if t != 0 {
		if st.startedAt == 0 || t < st.startedAt {
			st.startedAt = t
		}
		st.lastAt = max(st.lastAt, t)
	}
	who := f.who
	setIf(&st.harness, who.harness)
	setIf(&st.title, who.title)
	setIf(&st.model, who.model)
	if who.cwd != "" && who.cwd != st.cwd || st.project == "" && st.cwd != "" {
		setIf(&st.cwd, who.cwd)
		st.project = w.projectOf(who.host, st.cwd)
	}
	st.ended = sql.NullString{}
	if f.ended != nil {
		b, err := json.Marshal(f.ended)
		if err != nil {
			return fmt.Errorf("encode an end: %w", err)
		}
		st.ended = sql.NullString{String: string(b), Valid: true}
	}
	if st.turn != nil && who.model != "" && st.turn.model != who.model {
		st.turn.model, st.turnDirty = who.model, true
	}
	// Usage first: the counts an agent.done carries are its turn's.
	if err := w.usage(st, f, t); err != nil {
		return err
	}
	if err := w.event(st, f, t); err != nil {
		return err
	}
	// The session is neither waiting nor blocked after it: the fold closed
	// its waits (a hook's, when the journal shows the agent went on with
	// no wait.finished). A wait newer than the fact stays: a journal told
	// again from its start (Fresh) reaches it later, while its hook is not
	// told again.
	if f.closes {
		return w.endWaits(st, t, agentbridge.WaitAnswered)
	}
	return nil
}

// usage adds what the session used since its last fact, at t: the change
// of the fold's totals since then (a fold built anew, Recount, counts from
// zero again), or, when the event's report gives the session's totals
// (Total), the change of the usage counted so far.
func (w *txn) usage(st *sessionState, f *queued, t int64) error {
	if f.recount {
		st.seen = agentbridge.Usage{}
	}
	d := f.usage.Sub(st.seen)
	if f.total {
		d = f.usage.Sub(st.usage)
	}
	st.seen = f.usage
	if d == (agentbridge.Usage{}) {
		return nil
	}
	if _, err := w.exec(`INSERT INTO usage (sid, turn, at, model, input, output, cache_read, cache_write)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, st.sid, st.turnIdx(), t, f.who.model,
		d.InputTokens, d.OutputTokens, d.CacheReadTokens, d.CacheWriteTokens); err != nil {
		return fmt.Errorf("add usage: %w", err)
	}
	st.usage = st.usage.Add(d)
	return nil
}

// event folds the fact's event at t.
func (w *txn) event(st *sessionState, f *queued, t int64) error {
	switch f.kind {
	case kindTurnStarted:
		if err := w.endTurn(st, t, "", agentbridge.WaitTurnEnded); err != nil {
			return err
		}
		st.turn = &openTurn{idx: st.nextTurn, model: f.who.model}
		st.nextTurn++
		if _, err := w.exec(`INSERT INTO turns (sid, idx, turn_id, started_at, model) VALUES (?, ?, ?, ?, ?)`,
			st.sid, st.turn.idx, f.id, t, f.who.model); err != nil {
			return fmt.Errorf("add a turn: %w", err)
		}
	case kindAgentDone:
		return w.endTurn(st, t, agentbridge.Outcome(f.word), agentbridge.WaitTurnEnded)
	case kindAgentExited:
		return w.endTurn(st, t, agentbridge.OutcomeCancelled, agentbridge.WaitExited)
	case kindSessionStopped:
		return w.endTurn(st, t, agentbridge.OutcomeCancelled, agentbridge.WaitStopped)
	case kindToolStarted:
		if _, open := st.tools[f.id]; open {
			return nil
		}
		var tid int64
		if err := w.one(`INSERT INTO tools (sid, turn, tool_id, name, started_at) VALUES (?, ?, ?, ?, ?) RETURNING tid`,
			[]any{st.sid, st.turnIdx(), f.id, f.text, t}, &tid); err != nil {
			return fmt.Errorf("add a tool: %w", err)
		}
		st.tools[f.id] = tid
		if st.turn != nil {
			st.turn.tools++
			st.turnDirty = true
		}
	case kindToolFinished:
		tid, open := st.tools[f.id]
		if !open {
			return nil
		}
		delete(st.tools, f.id)
		if _, err := w.exec("UPDATE tools SET ended_at=?, outcome=? WHERE tid=?", t, f.word, tid); err != nil {
			return fmt.Errorf("end a tool: %w", err)
		}
	case kindWaitStarted:
		for _, ow := range st.waits {
			if ow.id == f.id {
				return nil
			}
		}
		ow := openWait{id: f.id, at: t}
		if err := w.one(`INSERT INTO waits (sid, turn, wait_id, state, reason, started_at, journal)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING wid`, []any{st.sid, st.turnIdx(), f.id, f.word, f.text, t, !f.hook}, &ow.wid); err != nil {
			return fmt.Errorf("add a wait: %w", err)
		}
		st.waits = append(st.waits, ow)
	case kindWaitFinished:
		for i, ow := range st.waits {
			if ow.id == f.id {
				st.waits = append(st.waits[:i], st.waits[i+1:]...)
				return w.endWait(ow, t, agentbridge.WaitAnswered)
			}
		}
	}
	return nil
}

func (st *sessionState) turnIdx() int {
	if st.turn == nil {
		return -1
	}
	return st.turn.idx
}

// endTurn ends the open turn at t with outcome (none open: nothing), and
// closes the open tools and the waits that started at or before t, the
// waits as answered how.
func (w *txn) endTurn(st *sessionState, t int64, outcome agentbridge.Outcome, how string) error {
	if tu := st.turn; tu != nil {
		st.turn, st.turnDirty = nil, false
		if _, err := w.exec("UPDATE turns SET ended_at=?, outcome=?, model=?, tools=? WHERE sid=? AND idx=?",
			t, outcome, tu.model, tu.tools, st.sid, tu.idx); err != nil {
			return fmt.Errorf("end a turn: %w", err)
		}
	}
	if len(st.tools) > 0 {
		clear(st.tools)
		if _, err := w.exec("UPDATE tools SET ended_at=? WHERE sid=? AND ended_at IS NULL", t, st.sid); err != nil {
			return fmt.Errorf("end the tools: %w", err)
		}
	}
	return w.endWaits(st, t, how)
}

// endWaits ends the session's open waits that started at or before t
// (all of them when t is unknown) as answered how; a newer one (a hook's
// wait, while the journal is told again) stays open.
func (w *txn) endWaits(st *sessionState, t int64, how string) error {
	keep := st.waits[:0]
	for _, ow := range st.waits {
		if t != 0 && ow.at > t {
			keep = append(keep, ow)
			continue
		}
		if err := w.endWait(ow, t, how); err != nil {
			return err
		}
	}
	st.waits = keep
	return nil
}

func (w *txn) endWait(ow openWait, t int64, how string) error {
	if ow.bridge {
		how = agentbridge.WaitFromBridge
	}
	if _, err := w.exec("UPDATE waits SET ended_at=?, answered=? WHERE wid=?", t, how, ow.wid); err != nil {
		return fmt.Errorf("end a wait: %w", err)
	}
	return nil
}

// answered marks a session's open waits as answered through the bridge,
// or its last wait answered since at.
func (w *txn) answered(m *answeredMark) error {
	st, err := w.state(sessionKey{m.host, m.source, m.id}, false)
	if err != nil || st == nil {
		return err
	}
	if len(st.waits) > 0 {
		for i := range st.waits {
			st.waits[i].bridge = true
		}
		return nil
	}
	_, err = w.exec(`UPDATE waits SET answered=? WHERE wid = (SELECT wid FROM waits
		WHERE sid=? AND ended_at >= ? AND answered=? ORDER BY ended_at DESC, wid DESC LIMIT 1)`,
		agentbridge.WaitFromBridge, st.sid, m.at, agentbridge.WaitAnswered)
	if err != nil {
		return fmt.Errorf("mark a wait answered: %w", err)
	}
	return nil
}

func setIf(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// projectOf returns the project root of a session's cwd, cached.
func (w *txn) projectOf(host, cwd string) string {
	if cwd == "" {
		return ""
	}
	if host != "" {
		return cwd // another machine's directory: nothing to look up here
	}
	if p, ok := w.projects[cwd]; ok {
		return p
	}
	find := w.o.Project
	if find == nil {
		find = ProjectRoot
	}
	p := find(cwd)
	if len(w.projects) >= maxProjects {
		clear(w.projects)
	}
	w.projects[cwd] = p
	return p
}

// ProjectRoot is the history's default project rule (Options.Project):
// the nearest directory at or above cwd that holds a .git entry (a
// repository's or a linked worktree's top: project.Root), else cwd
// itself. Only stat runs: nothing is opened, so no hostile directory can
// hang it.
func ProjectRoot(cwd string) string {
	if root, ok := project.Root(cwd); ok {
		return root
	}
	return cwd
}
