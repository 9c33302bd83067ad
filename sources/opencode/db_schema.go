package opencode

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// SchemaError says the database lacks a table or column the source reads
// (a schema it does not know, refused rather than misread), or (Refused
// set) holds what a read could run: a view or virtual table in place of a
// table the source reads, a virtual generated column in one, or a trigger.
type SchemaError struct {
	Table, Column string
	// Refused names what was refused: "view", "virtual table",
	// "generated column" or "trigger"; "" for a missing table or column.
	Refused string
}

func (e *SchemaError) Error() string {
	switch {
	case e.Refused != "" && e.Table == "" || e.Refused == "trigger":
		return "opencode database: it has a " + e.Refused
	case e.Refused != "" && e.Column != "":
		return fmt.Sprintf("opencode database: table %s has a %s", e.Table, e.Refused)
	case e.Refused != "":
		return fmt.Sprintf("opencode database: %s is a %s, not a table", e.Table, e.Refused)
	case e.Column == "":
		return "opencode database: no table " + e.Table
	}
	return fmt.Sprintf("opencode database: table %s has no column %s", e.Table, e.Column)
}

// required are the columns read from each table; the event table is
// optional (older databases have none), and so is session.agent.
var required = map[string][]string{
	"session": {"id", "parent_id", "directory", "title", "time_created", "time_updated"},
	"message": {"id", "session_id", "time_created", "time_updated", "data"},
	"part":    {"id", "message_id", "session_id", "time_created", "time_updated", "data"},
	"event":   {"aggregate_id", "type", "data"},
}

// readTables are the tables the source queries: each must be a table
// when it exists.
var readTables = []string{"session", "message", "part", "event", "migration"}

// schema checks, before any other query, what a read could run (views of
// the tables read, virtual generated columns in them, any virtual table or
// trigger: refused), then the tables and columns the source reads.
func (d *DB) schema(ctx context.Context) error {
	queries.Add(1)
	rows, err := d.db.QueryContext(ctx, `SELECT type, lower(substr(name,1,64)), lower(ltrim(substr(sql,1,64))) LIKE 'create virtual%'
		FROM sqlite_master LIMIT ?`, maxSchema+1)
	if err != nil {
		return classify(ctx, err)
	}
	n := 0
	for rows.Next() {
		var typ, name sql.NullString
		var virtual sql.NullBool
		if err := rows.Scan(&typ, &name, &virtual); err != nil {
			rows.Close()
			return classify(ctx, err)
		}
		n++
		read := slices.Contains(readTables, name.String)
		switch {
		case typ.String == "trigger":
			err = &SchemaError{Refused: "trigger"}
		case typ.String == "view" && read:
			err = &SchemaError{Table: name.String, Refused: "view"}
		case typ.String == "table" && virtual.Bool: // opencode makes none
			err = &SchemaError{Refused: "virtual table"}
			if read {
				err = &SchemaError{Table: name.String, Refused: "virtual table"}
			}
		}
		if err != nil {
			rows.Close()
			return err
		}
	}
	if err := closeRows(rows); err != nil {
		return classify(ctx, err)
	}
	if n > maxSchema {
		return fmt.Errorf("%w: more than %d schema entries", ErrLimit, maxSchema)
	}
	for _, table := range []string{"session", "message", "part", "event"} {
		queries.Add(1)
		rows, err := d.db.QueryContext(ctx, "SELECT substr(name,1,64), hidden FROM pragma_table_xinfo(?) LIMIT 1000", table)
		if err != nil {
			return classify(ctx, err)
		}
		var cols []string
		for rows.Next() {
			var c string
			var hidden int
			if err := rows.Scan(&c, &hidden); err != nil {
				rows.Close()
				return classify(ctx, err)
			}
			if hidden == 2 { // computed at each read
				rows.Close()
				return &SchemaError{Table: table, Column: c, Refused: "generated column"}
			}
			cols = append(cols, c)
		}
		if err := closeRows(rows); err != nil {
			return classify(ctx, err)
		}
		if len(cols) == 0 {
			if table == "event" {
				continue
			}
			return &SchemaError{Table: table}
		}
		for _, c := range required[table] {
			if !slices.Contains(cols, c) {
				return &SchemaError{Table: table, Column: c}
			}
		}
		switch table {
		case "event":
			d.events = true
		case "session":
			d.agent = slices.Contains(cols, "agent")
		}
	}
	queries.Add(1)
	var v sql.NullString
	if err := d.db.QueryRowContext(ctx, "SELECT substr(max(id),1,128) FROM migration").Scan(&v); err == nil {
		d.Version = v.String
	} else if ctx.Err() != nil {
		return classify(ctx, err)
	}
	return nil
}
