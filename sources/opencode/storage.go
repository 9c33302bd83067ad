package opencode

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentbridge/agentbridge/validate"
)

// The older file storage (opencode before its database): one JSON file
// per object, storage/session/<project>/<session>.json,
// storage/message/<session>/<message>.json and
// storage/part/<message>/<part>.json, each rewritten whole: the shared
// tailer reads them whole (sources.WholeFiles), at the scan and on every
// change.

// storageJSON is the union of the fields read from the object files.
type storageJSON struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	ParentID  string `json:"parentID"`
	Directory string `json:"directory"`
	Title     string `json:"title"`
	Agent     string `json:"agent"`
	Role      string `json:"role"`
	Finish    string `json:"finish"`
	ModelID   string `json:"modelID"`
	Model     struct {
		ModelID string `json:"modelID"`
	} `json:"model"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
	Time struct {
		Created   int64 `json:"created"`
		Updated   int64 `json:"updated"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	Type      string `json:"type"`
	Tool      string `json:"tool"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	State     struct {
		Status   string `json:"status"`
		Error    string `json:"error"`
		Metadata struct {
			SessionID string `json:"sessionId"`
		} `json:"metadata"`
		Time struct {
			Start int64 `json:"start"`
		} `json:"time"`
	} `json:"state"`
}

// storageKind says which object a file under root (the home's storage
// directory) is: "session", "message" or "part" for
// root/<kind>/<dir>/<id>.json, else "".
func storageKind(root, p string) string {
	rel, ok := strings.CutPrefix(p, root+"/")
	if !ok {
		return ""
	}
	parts := strings.Split(rel, "/")
	if len(parts) != 3 || !strings.HasSuffix(parts[2], ".json") || parts[1] == "" {
		return ""
	}
	switch parts[0] {
	case "session", "message", "part":
		return parts[0]
	}
	return ""
}

// storageDir reports whether dir is on the way to the object files.
func storageDir(root, dir string) bool {
	rel, ok := strings.CutPrefix(dir, root+"/")
	if !ok {
		return false
	}
	parts := strings.Split(rel, "/")
	switch parts[0] {
	case "session", "message", "part":
		return len(parts) <= 2
	}
	return false
}

// DecodeStorage decodes one object file of the given kind; ok is false
// for a file that is not such an object.
func DecodeStorage(kind string, data []byte) (r Record, ok bool) {
	var o storageJSON
	if json.Unmarshal(data, &o) != nil || o.ID == "" {
		return Record{}, false
	}
	switch kind {
	case "session":
		return Record{Session: &SessionInfo{ID: o.ID, ParentID: o.ParentID, Directory: o.Directory,
			Title: o.Title, Agent: o.Agent, Created: o.Time.Created, Updated: o.Time.Updated}}, true
	case "message":
		model := o.ModelID
		if model == "" {
			model = o.Model.ModelID
		}
		mi := &MessageInfo{ID: o.ID, SessionID: o.SessionID, Role: o.Role, Created: o.Time.Created,
			Completed: o.Time.Completed, Finish: o.Finish, Model: model}
		if o.Error != nil {
			mi.Error, mi.ErrorText = o.Error.Name, truncate(o.Error.Data.Message, validate.MaxError)
			if mi.Error == "" {
				mi.Error = "error"
			}
		}
		return Record{Message: mi}, o.SessionID != ""
	case "part":
		return Record{Part: &PartInfo{ID: o.ID, MessageID: o.MessageID, SessionID: o.SessionID, Type: o.Type,
				Tool: o.Tool, Status: o.State.Status, Text: truncate(o.Text, maxText), Synthetic: o.Synthetic,
				Child: o.State.Metadata.SessionID, Started: o.State.Time.Start, Error: truncate(o.State.Error, maxErrorText)}},
			o.SessionID != "" && o.MessageID != ""
	}
	return Record{}, false
}

// orderStorage puts the object files read at a scan (in directory order)
// in the order they were made: sessions (by creation, so that a parent
// comes before its subagents), then each message followed by its parts
// (ids grow with time).
func orderStorage(recs []Record) {
	key := func(r Record) (int, int64, string, int, string) {
		switch {
		case r.Session != nil:
			return 0, r.Session.Created, r.Session.ID, 0, ""
		case r.Message != nil:
			return 1, 0, r.Message.ID, 0, ""
		default:
			return 1, 0, r.Part.MessageID, 1, r.Part.ID
		}
	}
	slices.SortStableFunc(recs, func(a, b Record) int {
		ag, at, aid, ak, ap := key(a)
		bg, bt, bid, bk, bp := key(b)
		switch {
		case ag != bg:
			return ag - bg
		case at != bt:
			return cmpInt(at, bt)
		case aid != bid:
			return strings.Compare(aid, bid)
		case ak != bk:
			return ak - bk
		}
		return strings.Compare(ap, bp)
	})
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] // validate.Title repairs a cut character
	}
	return s
}
