package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// ErrMalformed is returned (wrapped) for a transcript line that is not a
// JSON object. The caller reports it as a diagnostic; the mapper's state is
// unchanged and the next line is read as usual.
var ErrMalformed = errors.New("claudecode: malformed transcript line")

// Tool names with a meaning beyond "a tool ran".
const (
	toolAgent       = "Agent" // 2.1.x subagent tool
	toolTask        = "Task"  // its older name
	toolAskQuestion = "AskUserQuestion"
	toolExitPlan    = "ExitPlanMode"
)

// Wait reasons the mapper infers from the journal alone.
const (
	reasonQuestion = "answer a question"
	reasonPlan     = "approve the plan"
)

// Mapper turns the transcript lines of one Claude Code session into
// lifecycle events, in order. It is pure: no I/O, no clock; every event's
// occurredAt comes from the record's own timestamp. Feed it complete lines
// with Line; tell it what the live registry says with Registry; end it with
// Exited. A Mapper is not safe for concurrent use.
type Mapper struct {
	id         string
	inferWaits bool
	sidechain  bool

	started bool
	pid     int
	startAt int64 // the process start (registry startedAt), for session.started
	lastAt  int64 // timestamp of the latest record
	cwd     string
	model   string

	customTitle, aiTitle, summaryTitle, promptTitle string
	title                                           string // as last published

	// command is the promptId of the slash command typed last, until the
	// prompt it sends the model (an isMeta record of that promptId) opens
	// its turn.
	command string

	turn string // open turn id; "" when none
	// endedBy is the API message id of the reply that ended the last turn:
	// Claude Code writes one assistant record per content block (thinking,
	// then text), each with the reply's stop_reason, so the blocks after
	// the first belong to the turn that already ended.
	endedBy string
	// turnAt is the timestamp of the record that opened the current (or
	// last) turn, unprompted when no prompt did (ensureTurn): a prompt
	// stamped before it is that turn's own, written late (see prompt).
	turnAt     int64
	unprompted bool
	turns      int
	used       map[string]struct{} // turn ids given out, so none repeats

	// Which tools are open and which subagents run is the fold's (view,
	// loaded into toolOrder and subOrder at each call, see load); the
	// mapper keeps only what their records said, for the ids the fold has
	// open.
	view      func() fold.View
	own       *fold.Session        // the mapper's own fold when no view is given (MapperOptions.View)
	tools     map[string]*openTool // what the tool_use of each open tool said, by id
	toolOrder []string             // scratch: the open tool ids in start order
	subs      map[string]*subagent // how each running subagent was launched, by id
	subOrder  []string             // scratch: the running subagent ids in start order
	agents    map[string]string    // Claude agentId → subagent id
	everSub   map[string]struct{}  // every subagent id ever started

	reg     RegistryState // last registry state applied
	regWait string        // open registry wait id
	// regWaitTool is the tool the open registry wait names ("" when its
	// reason is the registry's own text, e.g. "permission prompt").
	regWaitTool string
	answered    bool // the open turn has a reply from the model
	busySeen    bool // the registry said busy during the open turn
	// goneAt is when the bound process was seen gone (epoch ms; 0: not
	// gone). Records stamped no later were written by that process and
	// read after its exit: they no longer start or end anything.
	goneAt int64
	// exitKnown: the mapper ended what it keeps of its bound process
	// (endProcess), told by the caller (Gone, Exited) or read from the
	// view (load); a new process (SetOrigin) clears it.
	exitKnown bool
	lateMoved bool   // a line of that tail moved the session out of exited
	late      bool   // the record being read is of that tail
	exitTurn  string // the turn open when the process was seen gone

	rawCwd, cleanCwd string // the last record's cwd, and it cleaned

	out []agentbridge.Event
	dec decoder
	rec record

	// jobWait: the open wait of a blocked background session (Job)
	jobWait string
}

type openTool struct {
	name     string
	detail   string // what it acts on (command, file, URL…), raw; "" if none
	subagent bool
	wait     bool // an inferred wait is open on it
}

type subagent struct {
	async  bool // launched in the background: outlives its tool and turn
	linked bool // its Claude agentId is known
}

// MapperOptions configure a Mapper.
type MapperOptions struct {
	// PID is the session's process when already known (from the registry).
	PID int
	// InferWaits opens a wait on a pending AskUserQuestion or ExitPlanMode
	// tool_use. Set it when no registry with status observes waits.
	InferWaits bool
	// Sidechain says the transcript is a subagent's own: its records, all
	// marked isSidechain, are read as the session's (in a root transcript
	// they belong to a subagent and are skipped).
	Sidechain bool
	// View returns the view of the session's fold (Sessions.View), which
	// tells which tools are open and which subagents run: the fold folds
	// events the mapper does not make (agent.exited when the process
	// ends) and refuses some it makes. Nil: the mapper folds its own
	// events into a fold of its own (a transcript that is no session: a
	// subagent's; tests).
	View func() fold.View
}

// NewMapper returns a mapper for the session with the given id (the
// transcript's file stem). An id that is not an identity value is replaced
// by a stable derived one (see SessionID).
func NewMapper(sessionID string, o MapperOptions) *Mapper {
	m := &Mapper{
		id:         SessionID(sessionID),
		pid:        o.PID,
		inferWaits: o.InferWaits,
		sidechain:  o.Sidechain,
		view:       o.View,
		tools:      map[string]*openTool{},
		subs:       map[string]*subagent{},
		agents:     map[string]string{},
		used:       map[string]struct{}{},
		everSub:    map[string]struct{}{},
	}
	if m.view == nil {
		m.own = fold.NewSession(m.id, Harness)
		m.view = func() fold.View { return m.own }
	}
	return m
}

// load takes from the session's fold which tools are open and which
// subagents run, and forgets what the mapper kept of the others (the fold
// closed them: an agent.exited, a restart, a refused event). Every call
// that maps something calls it first.
//
// It also reads from the view whether the bridge ended the bound process
// (the registry's, SetOrigin) itself: agent.exited folded when Sessions
// saw it end through its pidfd before the registry said so. The mapper
// then ends what it keeps of the process (endProcess) and takes the
// exit's time (the hub's stamp) as when the process was seen gone (Gone),
// which tells the lines it wrote before (its late tail, LateExit) from a
// later process's.
func (m *Mapper) load() {
	v := m.view()
	if at, ok := v.Exited(); ok && m.pid != 0 && !m.exitKnown {
		m.Gone(at)
		m.endProcess()
	}
	m.toolOrder = slices.DeleteFunc(v.OpenTools(m.toolOrder[:0]), func(id string) bool { return m.tools[id] == nil })
	if len(m.tools) > len(m.toolOrder) {
		maps.DeleteFunc(m.tools, func(id string, _ *openTool) bool { return !slices.Contains(m.toolOrder, id) })
	}
	m.subOrder = slices.DeleteFunc(v.RunningSubagents(m.subOrder[:0]), func(id string) bool { return m.subs[id] == nil })
	if len(m.subs) > len(m.subOrder) {
		maps.DeleteFunc(m.subs, func(id string, _ *subagent) bool { return !slices.Contains(m.subOrder, id) })
	}
}

// done folds evs into the mapper's own fold, when it has one, and
// returns them.
func (m *Mapper) done(evs []agentbridge.Event) []agentbridge.Event {
	if m.own != nil {
		for _, e := range evs {
			m.own.Apply(e)
		}
	}
	return evs
}

// SessionID returns the session id the bridge publishes for a Claude Code
// session id: itself when it is an identity value (a UUID always is), else
// a stable derived id.
func SessionID(claudeID string) string { return validate.SafeID(claudeID) }

// ID returns the published session id.
func (m *Mapper) ID() string { return m.id }

// Started reports whether session.started was emitted.
func (m *Mapper) Started() bool { return m.started }

// Cwd returns the working directory the records named last ("" if none).
func (m *Mapper) Cwd() string { return m.cwd }

// Title returns the current title ("" if none).
func (m *Mapper) Title() string { return m.title }

// Model returns the current model ("" if none).
func (m *Mapper) Model() string { return m.model }

// InTurn reports whether a turn is open.
func (m *Mapper) InTurn() bool { return m.turn != "" }

// Line maps one complete transcript line (without its newline). Unknown
// record types and records without meaning for the lifecycle give no
// events. A line that is not a JSON object gives an error wrapping
// ErrMalformed and no events. The returned slice is valid until the next
// call.
func (m *Mapper) Line(line []byte) ([]agentbridge.Event, error) {
	m.out = m.out[:0]
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if line[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	r := &m.rec
	if err := m.dec.decode(line, r); err != nil {
		*r = record{}
		return nil, fmt.Errorf("%w: %s", ErrMalformed, err)
	}
	m.load()
	m.record(r)
	return m.done(m.out), nil
}

// jsonProblem describes a decoding error without quoting the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "invalid JSON at byte " + strconv.FormatInt(se.Offset, 10)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "field " + strconv.Quote(te.Field) + " has the wrong type"
	}
	return "invalid JSON"
}

// Version returns the Claude Code version the last record given to Line
// names ("" when none).
func (m *Mapper) Version() string { return m.rec.Version }

// Start emits session.started when no record did yet, so that a session
// whose transcript holds only metadata (or nothing) still becomes known.
func (m *Mapper) Start() []agentbridge.Event {
	m.out = m.out[:0]
	m.ensureStarted()
	return m.done(m.out)
}

func (m *Mapper) record(r *record) {
	if m.sidechain {
		r.IsSidechain = false
	}
	at := sources.Millis(r.Timestamp)
	if at > m.lastAt {
		m.lastAt = at
	}
	// The tail of a process that exited, read after its exit was seen, is
	// still what the process did (its prompt, its reply, how the turn
	// ended): it is read as usual; LateExit then ends the session again.
	m.late = m.goneAt != 0 && at != 0 && at <= m.goneAt
	if m.late {
		first := len(m.out)
		defer func() {
			for _, e := range m.out[first:] {
				if movesStatus(e.Kind) {
					m.lateMoved = true
				}
			}
		}()
	}
	if r.Cwd != m.rawCwd { // every record names it: clean it once
		m.rawCwd, m.cleanCwd = r.Cwd, validate.CleanCwd(r.Cwd)
	}
	if c := m.cleanCwd; c != "" && !r.IsSidechain {
		if m.cwd == "" || !m.started {
			m.cwd = c
		}
	}
	switch r.Type {
	case "user":
		if !r.IsSidechain {
			m.ensureStarted()
			m.user(r, at)
		}
	case "assistant":
		m.ensureStarted()
		if !r.IsSidechain {
			m.assistant(r, at)
		} else if !r.IsAPIError && r.msg.Model != "<synthetic>" {
			m.usage(&r.msg, at) // an inline subagent's tokens are the session's too
		}
	case "system":
		if !r.IsSidechain {
			m.ensureStarted()
			m.system(r, at)
		}
	case "custom-title":
		m.customTitle = r.CustomTitle
	case "ai-title":
		m.aiTitle = r.AITitle
	case "summary":
		m.summaryTitle = r.Summary
	case "attachment":
		if m.cwd != "" {
			m.ensureStarted()
		}
		if !r.IsSidechain && r.attQueued && bytes.Contains(r.Attachment, []byte("task-notification")) {
			var a attachment
			if json.Unmarshal(r.Attachment, &a) == nil && a.Type == "queued_command" {
				m.taskNotification(a.Prompt, at)
			}
		}
	default:
		// attachments, progress, queue operations, snapshots and record
		// types of newer versions carry nothing the lifecycle needs.
		if m.cwd != "" {
			m.ensureStarted()
		}
	}
	m.updateTitle(at)
}

func (m *Mapper) emit(e agentbridge.Event) { m.out = append(m.out, e) }

func (m *Mapper) ensureStarted() {
	if m.started {
		return
	}
	m.started = true
	m.title = m.effectiveTitle()
	m.emit(m.startEvent())
}

// startEvent is session.started with everything known now. Its occurredAt
// is the process start from the registry, never a record's time: the
// session's process may be younger than its transcript (a resumed
// session), and the pid-reuse guard compares the two.
func (m *Mapper) startEvent() agentbridge.Event {
	return agentbridge.Event{
		Kind: agentbridge.KindSessionStarted, OccurredAt: m.startAt,
		Title: m.title, Model: m.model, Cwd: m.cwd, PID: m.pid,
	}
}

// Restate returns session.started with the session's current title, model,
// cwd and pid. It is still needed beside the fold's view: when the hub
// dropped a session (it stopped after exiting: no fold, an empty view)
// that its transcript brings back, a new fold knows nothing of what
// earlier lines told (the title, model and cwd, which only the mapper
// keeps) nor of the pid the registry gave; and a new process that takes
// up the session (claude --resume) is bound by session.started with its
// pid.
func (m *Mapper) Restate() agentbridge.Event {
	m.started = true
	e := m.startEvent()
	m.done([]agentbridge.Event{e})
	return e
}

// LastAt returns the time of the latest record read (epoch ms; 0: none).
func (m *Mapper) LastAt() int64 { return m.lastAt }

// SetOrigin records what the registry says of the session's process before
// the session started: its pid, cwd (used until a record names one) and
// start time (epoch ms). After the start it only updates what a later
// Restate reports.
func (m *Mapper) SetOrigin(pid int, cwd string, startedAt int64) {
	m.load() // the end of the process before, when the bridge folded it
	m.pid, m.startAt = pid, startedAt
	m.goneAt, m.lateMoved, m.exitTurn, m.exitKnown = 0, false, "", false
	if m.cwd == "" {
		m.cwd = validate.CleanCwd(cwd)
	}
}

func (m *Mapper) effectiveTitle() string {
	for _, t := range []string{m.customTitle, m.aiTitle, m.summaryTitle, m.promptTitle} {
		if d := text.Display(t, validate.MaxTitle); d != "" {
			return d
		}
	}
	return ""
}

func (m *Mapper) updateTitle(at int64) {
	if !m.started {
		return
	}
	if t := m.effectiveTitle(); t != m.title && t != "" {
		m.title = t
		m.emit(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at, Title: t})
	}
}
