package sourcestest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A Scenario is one recorded scenario in the layout of the Irrlicht
// project's replay data (MIT licence), copied into a package's testdata:
//
//	<scenario>/expected.jsonl                 notes, then one Phase per line
//	<scenario>/recordings/<run>/transcript.jsonl  the agent's journal(s), final
//	<scenario>/recordings/<run>/events.jsonl      that daemon's log: the sizes the journals grew by
//
// A scenario may have no recording (the agent cannot do it); Recordings is
// then empty.
type Scenario struct {
	Name       string
	Phases     []Phase
	Recordings []*Recording
}

// Phase is one line of expected.jsonl: a state the recorded session
// reaches (State: "ready", "working" or "waiting", that project's three
// states) or a lifecycle event (Kind: "pid_discovered", "process_exited",
// "transcript_new", "parent_linked", "transcript_removed", …).
type Phase struct {
	Name            string   `json:"phase"`
	State           string   `json:"expected_state"`
	Kind            string   `json:"kind"`
	RelativeTo      string   `json:"relative_to"`
	SameSessionAs   string   `json:"same_session_as"`
	NewSession      bool     `json:"new_session"`
	SessionIDPrefix string   `json:"session_id_prefix"`
	Invariants      []string `json:"invariants"`
	KnownFailing    bool     `json:"known_failing"`
}

// A Recording is one run of a scenario.
type Recording struct {
	Name string
	// Transcript is transcript.jsonl: the run's journal files as they stood
	// at its end, concatenated when the run had several sessions.
	Transcript []byte
	// Growth lists, in the log's order, every size a journal was seen at.
	Growth []Growth
}

// Growth is one transcript_new or transcript_activity entry of events.jsonl:
// the journal of Session was Size bytes long.
type Growth struct {
	Session string
	Path    string // the path recorded (on the recorder's machine)
	Size    int64
}

// LoadScenario reads the scenario in dir.
func LoadScenario(dir string) (*Scenario, error) {
	sc := &Scenario{Name: filepath.Base(dir)}
	b, err := os.ReadFile(filepath.Join(dir, "expected.jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if i == 0 || len(bytes.TrimSpace(line)) == 0 { // line 1: notes
			continue
		}
		var p Phase
		if err := json.Unmarshal(line, &p); err != nil {
			return nil, fmt.Errorf("%s: expected.jsonl line %d: %w", sc.Name, i+1, err)
		}
		sc.Phases = append(sc.Phases, p)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "recordings", "*", "transcript.jsonl"))
	for _, t := range runs {
		rec, err := LoadRecording(filepath.Dir(t))
		if err != nil {
			return nil, err
		}
		sc.Recordings = append(sc.Recordings, rec)
	}
	return sc, nil
}

// LoadRecording reads one recording directory (transcript.jsonl and
// events.jsonl).
func LoadRecording(dir string) (*Recording, error) {
	rec := &Recording{Name: filepath.Base(dir)}
	var err error
	if rec.Transcript, err = os.ReadFile(filepath.Join(dir, "transcript.jsonl")); err != nil {
		return nil, err
	}
	rec.Growth, err = ReadGrowth(filepath.Join(dir, "events.jsonl"))
	return rec, err
}

// ReadGrowth reads the Growth entries of an events.jsonl (a recorder's
// log: transcript_new and transcript_activity entries with file_size), in
// the log's order.
func ReadGrowth(path string) ([]Growth, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var gs []Growth
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Kind      string `json:"kind"`
			SessionID string `json:"session_id"`
			Path      string `json:"transcript_path"`
			FileSize  int64  `json:"file_size"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.FileSize <= 0 ||
			ev.Kind != "transcript_new" && ev.Kind != "transcript_activity" {
			continue
		}
		gs = append(gs, Growth{Session: ev.SessionID, Path: ev.Path, Size: ev.FileSize})
	}
	return gs, sc.Err()
}

// Sessions returns the sessions whose journals grew, in the order they
// first did.
func (r *Recording) Sessions() []string {
	var ids []string
	for _, g := range r.Growth {
		if !slices.Contains(ids, g.Session) {
			ids = append(ids, g.Session)
		}
	}
	return ids
}

// A File is one journal cut from a recording's transcript.
type File struct {
	Session string // the session id the recording's log knows it by
	Data    []byte
}

// SplitAt returns a Split for agents whose journals begin with a
// recognisable record: first reports whether a line opens a journal, and
// the session it belongs to. Lines before the first such line go to the
// first journal. A journal that appears again (a resumed session recorded
// twice) keeps the longer copy.
func SplitAt(first func(line []byte) (session string, ok bool)) func([]byte) ([]File, error) {
	return func(data []byte) ([]File, error) {
		var out []File
		at := map[string]int{}
		cur, start := "", 0
		flush := func(end int) {
			if end <= start {
				return
			}
			chunk := data[start:end]
			if i, ok := at[cur]; ok {
				if len(chunk) > len(out[i].Data) {
					out[i].Data = chunk
				}
				return
			}
			at[cur] = len(out)
			out = append(out, File{Session: cur, Data: chunk})
		}
		for off := 0; off < len(data); {
			end := bytes.IndexByte(data[off:], '\n')
			if end < 0 {
				end = len(data)
			} else {
				end += off + 1
			}
			if id, ok := first(bytes.TrimRight(data[off:end], "\r\n")); ok {
				if cur != "" {
					flush(off)
					start = off
				}
				cur = id
			}
			off = end
		}
		flush(len(data))
		if cur == "" {
			return nil, errors.New("sourcestest: no journal's first record in the transcript")
		}
		return out, nil
	}
}

// Whole is the Split of a recording with one session: the transcript is
// that session's journal.
func Whole(r *Recording) func([]byte) ([]File, error) {
	return func(data []byte) ([]File, error) {
		ids := r.Sessions()
		if len(ids) != 1 {
			return nil, fmt.Errorf("sourcestest: %d sessions grew; give Replay a Split", len(ids))
		}
		return []File{{Session: ids[0], Data: data}}, nil
	}
}

// After returns the part of a recorded path after the directory named dir
// (e.g. After(p, "copilot-home") for "…/copilot-home/session-state/x/events.jsonl"
// is "session-state/x/events.jsonl"), or "" when p has no such directory.
func After(p, dir string) string {
	parts := strings.Split(filepath.ToSlash(p), "/")
	for i := len(parts) - 2; i >= 0; i-- {
		if parts[i] == dir {
			return filepath.Join(parts[i+1:]...)
		}
	}
	return ""
}
