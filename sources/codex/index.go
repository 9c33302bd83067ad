package codex

import json "github.com/go-json-experiment/json"

// indexEntry is one line of $CODEX_HOME/session_index.jsonl, which Codex
// appends (and fsyncs) whenever a thread is named: {id, thread_name,
// updated_at}. The latest line for an id wins.
type indexEntry struct {
	ID         string `json:"id"`
	ThreadName string `json:"thread_name"`
}

// parseIndexLine decodes one session_index.jsonl line; ok is false for a
// line that names no thread or no name.
func parseIndexLine(line []byte) (id, name string, ok bool) {
	var e indexEntry
	if json.Unmarshal(line, &e) != nil || e.ID == "" || e.ThreadName == "" {
		return "", "", false
	}
	return e.ID, e.ThreadName, true
}
