package opencode

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// stamped is a record with the time it sorts by.
type stamped struct {
	at   int64
	kind int // 0 session, 1 message, 2 part: the order of a tie
	id   string
	r    Record
}

// Scan reads the current state: the sessions updated at or after cutoff
// (epoch ms) and their ancestors, then the messages and parts created at
// or after cutoff, in the order they were created, all in one read
// transaction; the reads that follow (Changes) start from there.
func (d *DB) Scan(ctx context.Context, cutoff int64) ([]Record, error) {
	if err := sideFiles(d.path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, readDeadline)
	defer cancel()
	recs, err := d.scan(ctx, cutoff)
	return recs, classify(ctx, err)
}

func (d *DB) scan(ctx context.Context, cutoff int64) ([]Record, error) {
	tx, err := d.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	agent := "NULL"
	if d.agent {
		agent = "agent"
	}
	queries.Add(1)
	rows, err := tx.QueryContext(ctx, `WITH RECURSIVE keep(id, n) AS (
		SELECT id, 0 FROM session WHERE time_updated >= ?1
		UNION SELECT s.parent_id, keep.n+1 FROM session s JOIN keep ON s.id = keep.id
			WHERE s.parent_id IS NOT NULL AND keep.n < 64)
		SELECT `+sessionCols(agent)+`
		FROM session WHERE id IN (SELECT id FROM keep) ORDER BY time_created, id LIMIT ?2`, cutoff, maxRows)
	if err != nil {
		return nil, err
	}
	var out []Record
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, Record{Session: s})
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}
	st, mark, err := d.tables(ctx, tx, "time_created", cutoff, false)
	if err != nil {
		return nil, err
	}
	for _, s := range st {
		out = append(out, s.r)
	}
	d.mark = max(mark, cutoff)
	clear(d.atMark)
	if d.events {
		queries.Add(1)
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT max(rowid) FROM event").Scan(&last); err != nil {
			return nil, err
		}
		d.last = last.Int64
	}
	return out, tx.Commit()
}

// tables reads the messages and parts whose column by (time_created or
// time_updated) is at or after from, merged in that order; it returns
// them and the latest time seen.
func (d *DB) tables(ctx context.Context, tx *sql.Tx, by string, from int64, sessions bool) ([]stamped, int64, error) {
	var out []stamped
	mark := from
	if sessions {
		agent := "NULL"
		if d.agent {
			agent = "agent"
		}
		queries.Add(1)
		rows, err := tx.QueryContext(ctx, `SELECT `+sessionCols(agent)+`
			FROM session WHERE time_updated >= ? ORDER BY time_updated, id LIMIT ?`, from, maxRows)
		if err != nil {
			return nil, 0, err
		}
		for rows.Next() {
			s, err := scanSession(rows)
			if err != nil {
				rows.Close()
				return nil, 0, err
			}
			out = append(out, stamped{at: s.Updated, kind: 0, id: s.ID, r: Record{Session: s}})
		}
		if err := closeRows(rows); err != nil {
			return nil, 0, err
		}
	}
	queries.Add(1)
	rows, err := tx.QueryContext(ctx, `SELECT `+cut("id")+`, `+cut("session_id")+`, `+by+`, `+strings.Join(messageCols("d", "$"), ", ")+`
		FROM (SELECT id, session_id, time_created, time_updated, `+valid("data")+` AS d FROM message WHERE `+by+` >= ?)
		ORDER BY `+by+`, id LIMIT ?`, from, maxRows)
	if err != nil {
		return nil, 0, err
	}
	for rows.Next() {
		var id, sid sql.NullString
		var at int64
		m, err := scanMessage(rows, &id, &sid, &at)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		m.ID, m.SessionID = id.String, sid.String
		out = append(out, stamped{at: at, kind: 1, id: m.ID, r: Record{Message: m}})
	}
	if err := closeRows(rows); err != nil {
		return nil, 0, err
	}
	queries.Add(1)
	rows, err = tx.QueryContext(ctx, `SELECT `+cut("id")+`, `+cut("message_id")+`, `+cut("session_id")+`, `+by+`, `+strings.Join(partCols("d", "$"), ", ")+`
		FROM (SELECT id, message_id, session_id, time_created, time_updated, `+valid("data")+` AS d FROM part WHERE `+by+` >= ?)
		ORDER BY `+by+`, id LIMIT ?`, from, maxRows)
	if err != nil {
		return nil, 0, err
	}
	for rows.Next() {
		var id, mid, sid sql.NullString
		var at int64
		p, err := scanPart(rows, &id, &mid, &sid, &at)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		p.ID, p.MessageID, p.SessionID = id.String, mid.String, sid.String
		out = append(out, stamped{at: at, kind: 2, id: p.ID, r: Record{Part: p}})
	}
	if err := closeRows(rows); err != nil {
		return nil, 0, err
	}
	slices.SortStableFunc(out, func(a, b stamped) int {
		switch {
		case a.at != b.at:
			return cmpInt(a.at, b.at)
		case a.kind != b.kind:
			return a.kind - b.kind
		}
		return strings.Compare(a.id, b.id)
	})
	for _, s := range out {
		mark = max(mark, s.at)
	}
	return out, mark, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Changes reads what changed since the last read: the event journal's
// new rows, or (without one) the rows whose time_updated reached the
// latest one seen. It reads in one read transaction; on ErrBusy nothing
// moves, and the next call reads the same changes.
func (d *DB) Changes(ctx context.Context) ([]Record, error) {
	if err := sideFiles(d.path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, readDeadline)
	defer cancel()
	var out []Record
	var err error
	if d.events {
		out, err = d.journal(ctx)
	} else {
		out, err = d.updated(ctx)
	}
	return out, classify(ctx, err)
}

// The event types the source reads, without their version suffix; a
// version other than 1 is schema drift.
var eventFamilies = map[string]bool{
	"session.created": true, "session.updated": true, "session.deleted": true,
	"message.updated": true, "message.part.updated": true,
}

func (d *DB) journal(ctx context.Context) ([]Record, error) {
	tx, err := d.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	cols := []string{"rowid", cut("type"),
		str("d", "$.info.id"), str("d", "$.info.parentID"), str("d", "$.info.directory"), str("d", "$.info.title"),
		str("d", "$.info.agent"), num("d", "$.info.time.created"), num("d", "$.info.time.updated"), str("d", "$.info.sessionID")}
	cols = append(cols, messageCols("d", "$.info")...)
	cols = append(cols, str("d", "$.part.id"), str("d", "$.part.messageID"), str("d", "$.part.sessionID"))
	cols = append(cols, partCols("d", "$.part")...)
	q := `SELECT ` + strings.Join(cols, ", ") + ` FROM (SELECT rowid, type, ` + valid("data") +
		` AS d FROM event WHERE rowid > ? ORDER BY rowid LIMIT ?)`
	var out []Record
	last := d.last
	d.more = false
	pages := 0
	for {
		queries.Add(1)
		rows, err := tx.QueryContext(ctx, q, last, maxRows)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			n++
			rowid, r, err := d.eventRow(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			last = rowid
			if r != nil {
				out = append(out, *r)
			}
		}
		if err := closeRows(rows); err != nil {
			return nil, err
		}
		if n < maxRows {
			break
		}
		if pages++; pages == maxPages {
			d.more = true // the rest on the next read
			break
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	if last == d.last {
		// nothing new: rows deleted at the end (a session removed) make
		// rowids be used again, so start after the journal's end now
		queries.Add(1)
		var end sql.NullInt64
		if err := d.db.QueryRowContext(ctx, "SELECT max(rowid) FROM event").Scan(&end); err != nil {
			return nil, err
		}
		last = min(last, end.Int64)
	}
	d.last = last
	return out, nil
}

// eventRow decodes one row of the journal query: nil for an event the
// source does not read.
func (d *DB) eventRow(sc scanner) (int64, *Record, error) {
	var rowid int64
	var typ, id, parent, dir, title, agent, sid, pid, pmid, psid sql.NullString
	var created, updated sql.NullInt64
	m, p := &MessageInfo{}, &PartInfo{}
	md, mfill := messageDest(m)
	pd, pfill := partDest(p)
	dest := []any{&rowid, &typ, &id, &parent, &dir, &title, &agent, &created, &updated, &sid}
	dest = append(dest, md...)
	dest = append(dest, &pid, &pmid, &psid)
	dest = append(dest, pd...)
	if err := sc.Scan(dest...); err != nil {
		return 0, nil, err
	}
	family, version, _ := cutVersion(typ.String)
	if !eventFamilies[family] {
		return rowid, nil, nil
	}
	if version != "1" {
		d.drift[family]++
		return rowid, nil, nil
	}
	switch family {
	case "session.created", "session.updated", "session.deleted":
		return rowid, &Record{Session: &SessionInfo{ID: id.String, ParentID: parent.String, Directory: dir.String,
			Title: title.String, Agent: agent.String, Created: created.Int64, Updated: updated.Int64},
			Deleted: family == "session.deleted"}, nil
	case "message.updated":
		mfill()
		m.ID, m.SessionID = id.String, sid.String
		return rowid, &Record{Message: m}, nil
	default: // message.part.updated
		pfill()
		p.ID, p.MessageID, p.SessionID = pid.String, pmid.String, psid.String
		return rowid, &Record{Part: p}, nil
	}
}

// cutVersion splits "message.updated.1" into its family and version.
func cutVersion(typ string) (family, version string, ok bool) {
	i := strings.LastIndexByte(typ, '.')
	if i < 0 {
		return typ, "", false
	}
	return typ[:i], typ[i+1:], true
}

// Drift returns and clears the counts of journal events skipped because
// their type has a version the source does not know, by type family.
func (d *DB) Drift() map[string]int {
	if len(d.drift) == 0 {
		return nil
	}
	out := d.drift
	d.drift = map[string]int{}
	return out
}

func (d *DB) updated(ctx context.Context) ([]Record, error) {
	tx, err := d.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	st, mark, err := d.tables(ctx, tx, "time_updated", d.mark, true)
	if err != nil {
		return nil, err
	}
	var out []Record
	next := map[string]int64{}
	for _, s := range st {
		key := fmt.Sprint(s.kind) + s.id
		if at, ok := d.atMark[key]; ok && at == s.at {
			continue // read at the previous mark already
		}
		if s.at == mark {
			next[key] = s.at
		}
		out = append(out, s.r)
	}
	if mark > d.mark {
		d.atMark = next
	} else {
		for k, v := range next {
			d.atMark[k] = v
		}
	}
	d.mark = mark
	return out, tx.Commit()
}
