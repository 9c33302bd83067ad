package claudecode

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// Background sessions (claude --bg, `claude agents`): the daemon keeps
// $CLAUDE_CONFIG_DIR/jobs/<short id>/state.json for each, rewritten whole
// as the session moves (read from the 2.1.332 CLI's own writes, see
// testdata/SOURCES.md). Its tempo says sooner than the transcript or the
// registry (which shows such a session "idle") that the session is
// blocked on the user: "active" (working), "idle", "blocked" (needs you:
// a question, a login, …), with needs naming what it needs. The session
// is its sessionId's transcript.

// jobStateFile is the name of a job's state file.
const jobStateFile = "state.json"

// Job is what the source reads of a background session's state.json.
type Job struct {
	Short      string // the job's directory name
	SessionID  string
	Tempo      string // "active", "idle" or "blocked"
	Needs      string // what a blocked session needs, as the CLI words it
	CLIVersion string
	UpdatedAt  int64 // epoch ms, 0 if absent
}

// jobFile is the JSON of a state.json; fields not listed are ignored (its
// providerEnv, intent and output are never decoded).
type jobFile struct {
	SessionID  string `json:"sessionId"`
	Tempo      string `json:"tempo"`
	State      string `json:"state"`
	Needs      string `json:"needs"`
	CLIVersion string `json:"cliVersion"`
	UpdatedAt  string `json:"updatedAt"`
}

// ParseJob reads a job's state.json; short is its directory's name.
func ParseJob(short string, data []byte) (Job, error) {
	var f jobFile
	if err := json.Unmarshal(data, &f); err != nil {
		return Job{}, ErrPartial // rewritten whole: caught half-written
	}
	if !validate.ValidID(f.SessionID) || !validate.ValidID(short) {
		return Job{}, errors.New("claudecode: job state without a valid session id")
	}
	j := Job{Short: short, SessionID: f.SessionID, Tempo: f.Tempo, Needs: f.Needs, CLIVersion: f.CLIVersion}
	if t, err := time.Parse(time.RFC3339Nano, f.UpdatedAt); err == nil {
		j.UpdatedAt = t.UnixMilli()
	}
	if j.Tempo == "" && f.State == "blocked" { // a state written before tempo existed
		j.Tempo = "blocked"
	}
	return j, nil
}

// jobOf returns the job directory a path names when it is a job's
// state.json under jobs (jobs/<short>/state.json).
func jobOf(jobs, path string) (short string, ok bool) {
	rel, found := strings.CutPrefix(path, jobs+"/")
	dir, name, _ := strings.Cut(rel, "/")
	return dir, found && name == jobStateFile && validate.ValidID(dir)
}

// jobWaitID is the wait a blocked job opens: one per blocked spell (its
// state's update time), so a new block is a new wait.
func jobWaitID(j Job) string {
	return validate.SafeID("job-" + j.Short + "-" + time.UnixMilli(j.UpdatedAt).UTC().Format("150405.000"))
}

// Job applies a background session's state: blocked opens a wait (status
// blocked, reason what it needs) while a turn is open; any other tempo, or
// a new blocked spell, closes it. Like the registry, it never starts or
// ends a turn.
func (m *Mapper) Job(j Job, at int64) []agentbridge.Event {
	m.out = m.out[:0]
	id := ""
	if j.Tempo == "blocked" {
		id = jobWaitID(j)
	}
	if m.jobWait != "" && m.jobWait != id {
		m.emit(agentbridge.Event{Kind: agentbridge.KindWaitFinished, OccurredAt: at, WaitID: m.jobWait})
		m.jobWait = ""
	}
	if id != "" && m.jobWait == "" && m.turn != "" && m.started {
		reason := text.Display(j.Needs, validate.MaxWaitingFor)
		if reason == "" {
			reason = "needs you"
		}
		m.jobWait = id
		m.emit(agentbridge.Event{Kind: agentbridge.KindWaitStarted, OccurredAt: at, WaitID: id, State: agentbridge.StatusBlocked, Reason: reason})
	}
	return m.out
}

// jobFileRead applies one job state file (nil data: removed).
func (h *handler) jobFileRead(path string, data []byte) {
	short, _ := jobOf(h.jobs, path)
	if data == nil {
		delete(h.jobStates, short)
		return
	}
	j, err := ParseJob(short, data)
	if errors.Is(err, ErrPartial) {
		return
	}
	if err != nil {
		h.ss.BadLine(codeInvalidJob)
		return
	}
	h.ss.Version(Harness, j.CLIVersion)
	h.jobStates[short] = j
	h.applyJob(j)
}

// applyJob applies a job's state to its session, once its transcript has
// started it (the transcript may come after the state file).
func (h *handler) applyJob(j Job) {
	id := SessionID(j.SessionID)
	se := h.sessions[id]
	if se == nil || !se.m.Started() {
		return
	}
	at := j.UpdatedAt
	if at == 0 {
		at = time.Now().UnixMilli()
	}
	h.publish(id, se, se.m.Job(j, at))
}

// applyJobs applies the state of every job whose session is id (after its
// transcript was read: a turn may have opened).
func (h *handler) applyJobs(id string) {
	for _, j := range h.jobStates {
		if SessionID(j.SessionID) == id {
			h.applyJob(j)
		}
	}
}

// codeInvalidJob counts job state files that name no session.
const codeInvalidJob = "invalid-job-file"
