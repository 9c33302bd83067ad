package opencode

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/sources"
)

// The older file storage (opencode before its database): one JSON file
// per object, storage/session/<project>/<session>.json,
// storage/message/<session>/<message>.json and
// storage/part/<message>/<part>.json.
const (
	maxStorageFile  = 1 << 20 // a larger object file is skipped
	maxStorageFiles = 20000   // objects read at one scan
)

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

// StorageRecords reads the file storage under root (the home's storage
// directory): the sessions whose file was written at or after cutoff,
// their ancestors, and their messages and parts, in the order they were
// made. Files that are not regular, too large or not JSON are skipped and
// counted in bad.
func StorageRecords(root string, cutoff time.Time) (recs []Record, bad int) {
	budget := maxStorageFiles
	read := func(p string) *storageJSON {
		if budget <= 0 {
			return nil
		}
		budget--
		data, err := sources.ReadSmall(p, maxStorageFile)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				bad++
			}
			return nil
		}
		var o storageJSON
		if json.Unmarshal(data, &o) != nil || o.ID == "" {
			bad++
			return nil
		}
		return &o
	}
	all := map[string]*storageJSON{}
	recent := map[string]bool{}
	projects, _ := os.ReadDir(filepath.Join(root, "session"))
	for _, pr := range projects {
		if !pr.IsDir() {
			continue
		}
		dir := filepath.Join(root, "session", pr.Name())
		files, _ := os.ReadDir(dir)
		for _, f := range files {
			if !strings.HasSuffix(f.Name(), ".json") || !f.Type().IsRegular() {
				continue
			}
			info, err := f.Info()
			if err != nil {
				continue
			}
			if o := read(filepath.Join(dir, f.Name())); o != nil {
				all[o.ID] = o
				if !info.ModTime().Before(cutoff) {
					recent[o.ID] = true
				}
			}
		}
	}
	keep := map[string]bool{}
	for id := range recent {
		for n := 0; id != "" && n < 64 && !keep[id]; n++ {
			keep[id] = true
			if o := all[id]; o != nil {
				id = o.ParentID
			} else {
				id = ""
			}
		}
	}
	var sess []*storageJSON
	for id := range keep {
		if o := all[id]; o != nil {
			sess = append(sess, o)
		}
	}
	slices.SortFunc(sess, func(a, b *storageJSON) int {
		if a.Time.Created != b.Time.Created {
			return cmpInt(a.Time.Created, b.Time.Created)
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, s := range sess {
		recs = append(recs, Record{Session: &SessionInfo{ID: s.ID, ParentID: s.ParentID, Directory: s.Directory,
			Title: s.Title, Agent: s.Agent, Created: s.Time.Created, Updated: s.Time.Updated}})
	}
	for _, s := range sess {
		if !recent[s.ID] {
			continue
		}
		for _, m := range readDirObjects(filepath.Join(root, "message", s.ID), read) {
			model := m.ModelID
			if model == "" {
				model = m.Model.ModelID
			}
			mi := &MessageInfo{ID: m.ID, SessionID: s.ID, Role: m.Role, Created: m.Time.Created,
				Completed: m.Time.Completed, Finish: m.Finish, Model: model}
			if m.Error != nil {
				mi.Error = m.Error.Name
				if mi.Error == "" {
					mi.Error = "error"
				}
			}
			recs = append(recs, Record{Message: mi})
			for _, p := range readDirObjects(filepath.Join(root, "part", m.ID), read) {
				recs = append(recs, Record{Part: &PartInfo{ID: p.ID, MessageID: m.ID, SessionID: s.ID, Type: p.Type,
					Tool: p.Tool, Status: p.State.Status, Text: truncate(p.Text, maxText), Synthetic: p.Synthetic,
					Child: p.State.Metadata.SessionID, Started: p.State.Time.Start, Error: truncate(p.State.Error, maxErrorText)}})
			}
		}
	}
	return recs, bad
}

// readDirObjects reads the object files of one directory, sorted by id.
func readDirObjects(dir string, read func(string) *storageJSON) []*storageJSON {
	files, _ := os.ReadDir(dir)
	var out []*storageJSON
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".json") {
			if o := read(filepath.Join(dir, f.Name())); o != nil {
				out = append(out, o)
			}
		}
	}
	slices.SortFunc(out, func(a, b *storageJSON) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] // validate.Title repairs a cut character
	}
	return s
}
