package opencode

import (
	"database/sql"
	"fmt"
	"strings"

	"github.com/agentbridge/agentbridge/validate"
)

// maxText bounds the prompt text taken from a part, maxErrorText a tool's
// error (only its start is compared).
const (
	maxText      = 4096
	maxErrorText = 256
)

// str and num extract a JSON field as text or integer (NULL when absent
// or of another shape), so that a row of unexpected shape never fails
// the query.
func str(col, path string) string {
	return cut(fmt.Sprintf("CAST(json_extract(%s,'%s') AS TEXT)", col, path))
}

// maxField bounds, in SQL, every text column read (ids, a directory, a
// title, names): the longest a snapshot keeps (a cwd) with room to tell
// a value that is too long.
const maxField = 4096

// cut bounds the text of expr to maxField characters, in the query.
func cut(expr string) string { return fmt.Sprintf("substr(%s,1,%d)", expr, maxField) }

// sessionCols are the session columns read (agent: "NULL" when absent).
func sessionCols(agent string) string {
	return strings.Join([]string{cut("id"), cut("parent_id"), cut("directory"), cut("title"), cut(agent), "time_created", "time_updated"}, ", ")
}

func num(col, path string) string {
	return fmt.Sprintf("CAST(json_extract(%s,'%s') AS INTEGER)", col, path)
}

// valid replaces a column that is not JSON by an empty object.
func valid(col string) string {
	return fmt.Sprintf("CASE WHEN json_valid(%[1]s) THEN %[1]s ELSE '{}' END", col)
}

// message and part columns, from the JSON at col under prefix.
func messageCols(col, prefix string) []string {
	return []string{
		str(col, prefix+".role"), num(col, prefix+".time.created"), num(col, prefix+".time.completed"),
		str(col, prefix+".finish"), str(col, prefix+".error.name"), str(col, prefix+".modelID"),
		fmt.Sprintf("substr(%s,1,%d)", str(col, prefix+".error.data.message"), validate.MaxError),
	}
}

func partCols(col, prefix string) []string {
	return []string{
		str(col, prefix+".type"), str(col, prefix+".tool"), str(col, prefix+".state.status"),
		fmt.Sprintf("substr(%s,1,%d)", str(col, prefix+".text"), maxText),
		num(col, prefix+".synthetic"), str(col, prefix+".state.metadata.sessionId"),
		num(col, prefix+".state.time.start"),
		fmt.Sprintf("substr(%s,1,%d)", str(col, prefix+".state.error"), maxErrorText),
	}
}

type scanner interface{ Scan(dest ...any) error }

// messageDest returns the scan destinations of messageCols and the
// function that fills m from them after the scan.
func messageDest(m *MessageInfo) ([]any, func()) {
	var role, finish, errName, model, errText sql.NullString
	var created, completed sql.NullInt64
	return []any{&role, &created, &completed, &finish, &errName, &model, &errText}, func() {
		m.Role, m.Created, m.Completed = role.String, created.Int64, completed.Int64
		m.Finish, m.Error, m.Model, m.ErrorText = finish.String, errName.String, model.String, errText.String
	}
}

// partDest is messageDest for partCols.
func partDest(p *PartInfo) ([]any, func()) {
	var typ, tool, status, text, child sql.NullString
	var synthetic, start sql.NullInt64
	var errText sql.NullString
	return []any{&typ, &tool, &status, &text, &synthetic, &child, &start, &errText}, func() {
		p.Type, p.Tool, p.Status, p.Text = typ.String, tool.String, status.String, text.String
		p.Synthetic, p.Child, p.Started, p.Error = synthetic.Int64 != 0, child.String, start.Int64, errText.String
	}
}

func scanMessage(sc scanner, head ...any) (*MessageInfo, error) {
	return scanRow(sc, messageDest, head)
}

func scanPart(sc scanner, head ...any) (*PartInfo, error) {
	return scanRow(sc, partDest, head)
}

// scanRow scans a row into head and then the columns dest gives of a new
// T, which it fills once the scan succeeded.
func scanRow[T any](sc scanner, dest func(*T) ([]any, func()), head []any) (*T, error) {
	v := new(T)
	cols, fill := dest(v)
	if err := sc.Scan(append(head, cols...)...); err != nil {
		return nil, err
	}
	fill()
	return v, nil
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

func scanSession(sc scanner) (*SessionInfo, error) {
	var id, parent, dir, title, agent sql.NullString
	var created, updated sql.NullInt64
	if err := sc.Scan(&id, &parent, &dir, &title, &agent, &created, &updated); err != nil {
		return nil, err
	}
	return &SessionInfo{ID: id.String, ParentID: parent.String, Directory: dir.String, Title: title.String,
		Agent: agent.String, Created: created.Int64, Updated: updated.Int64}, nil
}
