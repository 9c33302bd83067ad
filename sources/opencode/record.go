package opencode

import (
	"regexp"
	"strings"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// Record is one row of what opencode stores, in the few fields the
// mapping needs: exactly one of Session, Message and Part is set. The
// database (its tables or its event journal) and the older file storage
// are all decoded into records, so that one mapping serves them all.
type Record struct {
	Session *SessionInfo
	Message *MessageInfo
	Part    *PartInfo
	// Deleted says the session, message or part was removed.
	Deleted bool
}

// SessionInfo is a session row: session table columns, the info of a
// session.* event, or storage/session/<project>/<id>.json.
type SessionInfo struct {
	ID, ParentID, Directory, Title, Agent string
	Created, Updated                      int64 // epoch ms
}

// MessageInfo is a message: role user opens a turn, role assistant carries
// the model and, once Completed is set, how the step ended (Finish, Error).
type MessageInfo struct {
	ID, SessionID, Role string
	Created, Completed  int64
	Finish              string // "stop", "tool-calls", "length", …
	Error               string // the error's name, e.g. MessageAbortedError
	ErrorText           string // the error's message (data.message), e.g. an API, quota or auth error
	Model               string // modelID
}

// PartInfo is a part of a message. Tool parts carry Tool and Status
// (pending, running, completed, error); text parts of the user carry the
// prompt; a task tool names the child session it started (Child).
type PartInfo struct {
	ID, MessageID, SessionID, Type string
	Tool, Status                   string
	Text                           string
	Synthetic                      bool
	Child                          string
	Started                        int64  // state.time.start, epoch ms
	Error                          string // state.error (its start), for a tool part that failed
}

// Ask is a permission request found in opencode's log: the session the
// log line is attributed to is resolved by Mapper.Ask.
type Ask struct {
	ID         string // per_…
	Permission string // bash, edit, webfetch, …
	Patterns   []string
	Session    string // the session the same run last named, if any
	At         int64  // when it was logged, epoch ms (0 unknown)
}

// Out is one lifecycle event for the session it belongs to: a subagent's
// records become events of its root session.
type Out struct {
	Session string
	Event   agentbridge.Event
}

// Codes of the records the mapping skips (counted by the source).
const (
	CodeUnknownStatus = "opencode-unknown-status" // a tool part's state.status the source does not know
)

// session is the mapping state of one session (root or subagent).
type session struct {
	parent  string // the parent session; "" for a root
	started bool   // session.started (root) or subagent.started (child) sent
	done    bool   // subagent: subagent.done sent
	title   string
	model   string
	turn    string // the latest user message that opened a turn
	ended   string // the latest assistant message that ended a turn
	// tools are the open tool parts by part id, with what a log's
	// permission request is matched by (a subagent's are in no fold); a
	// root's are kept to the tools its fold has open (Mapper.live)
	tools map[string]tool
	// the latest assistant message with a tool call the user rejected, and
	// the latest one completed with finish tool-calls: both together end
	// the turn (opencode stops after a rejection)
	rejected, toolCalls string
	// a root's open permission wait: its id ("" none), the tool part it
	// is for and the session (the root or a subagent) that part is in
	wait, waitPart, waitOwner string
}

type tool struct {
	name  string
	start int64
}

// Mapper turns records into lifecycle events. It keeps a little state per
// session (what was sent already, the open tool parts and wait), so that a
// record read twice or a row updated many times yields each event once.
// It does no I/O: the source feeds it, in the order opencode wrote.
type Mapper struct {
	s     map[string]*session
	views Views
	// Skipped counts records skipped by code (CodeUnknownStatus).
	Skipped map[string]int
}

// Views returns the view of a root session's fold (fold.View) as the
// events mapped so far left it.
type Views func(session string) fold.View

// NewMapper returns an empty Mapper that reads the root sessions' folds
// through views (nil: every view is empty).
func NewMapper(views Views) *Mapper {
	if views == nil {
		views = func(string) fold.View { return fold.ViewOf(nil) }
	}
	return &Mapper{s: map[string]*session{}, views: views, Skipped: map[string]int{}}
}

// live drops from a root session's tool parts those its fold closed
// (agent.exited closes them; the records never do).
func (m *Mapper) live(id string, s *session) {
	if s.parent != "" || len(s.tools) == 0 {
		return
	}
	v := m.views(id)
	for p := range s.tools {
		if !v.ToolOpen(p) {
			delete(s.tools, p)
		}
	}
}

// Forget drops a session's state (its database went away).
func (m *Mapper) Forget(id string) { delete(m.s, id) }

// Root returns the root session of id (id itself for a root; "" when an
// ancestor is unknown).
func (m *Mapper) Root(id string) string {
	for range 64 { // bounded: a corrupt parent chain may loop
		s := m.s[id]
		if s == nil {
			return ""
		}
		if s.parent == "" {
			return id
		}
		id = s.parent
	}
	return ""
}

// placeholder matches the titles opencode gives a session before it has
// one ("New session - 2026-…", "Child session - …").
var placeholder = regexp.MustCompile(`^(New|Child) session - \d{4}-`)

func cleanTitle(t string) string {
	if placeholder.MatchString(t) {
		return ""
	}
	return validate.Title(t)
}

// Apply maps one record.
func (m *Mapper) Apply(r Record) []Out {
	switch {
	case r.Session != nil:
		return m.session(r.Session, r.Deleted)
	case r.Message != nil && !r.Deleted:
		return m.message(r.Message)
	case r.Part != nil && !r.Deleted:
		return m.part(r.Part)
	}
	return nil
}

func (m *Mapper) session(in *SessionInfo, deleted bool) []Out {
	if in.ID == "" {
		return nil
	}
	s := m.s[in.ID]
	if deleted {
		if s == nil {
			return nil
		}
		root := m.Root(in.ID)
		delete(m.s, in.ID)
		if s.parent == "" {
			return []Out{{in.ID, agentbridge.Event{Kind: agentbridge.KindSessionStopped, Reason: "session deleted"}}}
		}
		if root != "" && s.started && !s.done {
			return []Out{{root, agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: in.ID, Outcome: agentbridge.OutcomeCancelled}}}
		}
		return nil
	}
	if s == nil {
		s = &session{parent: in.ParentID}
		if in.ParentID == in.ID {
			s.parent = ""
		}
		m.s[in.ID] = s
	}
	title := cleanTitle(in.Title)
	if s.parent != "" {
		return m.child(in.ID, s, title, validate.Label(in.Agent))
	}
	var out []Out
	if !s.started {
		s.started = true
		s.title = title
		out = append(out, Out{in.ID, agentbridge.Event{
			Kind: agentbridge.KindSessionStarted, OccurredAt: in.Created,
			Title: title, Cwd: validate.CleanCwd(in.Directory),
		}})
	} else if title != "" && title != s.title {
		s.title = title
		out = append(out, Out{in.ID, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Title: title}})
	}
	return out
}

// child lists a subagent session under its root, once; a subagent whose
// ancestors are unknown waits until they are.
func (m *Mapper) child(id string, s *session, title, typ string) []Out {
	if s.started {
		return nil
	}
	root := m.Root(id)
	if root == "" || !m.s[root].started {
		return nil
	}
	s.started = true
	s.title = title
	return []Out{{root, agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: id,
		ParentAgentID: s.parent, Title: title, Type: typ}}}
}

func (m *Mapper) message(in *MessageInfo) []Out {
	s := m.s[in.SessionID]
	if s == nil || in.ID == "" {
		return nil // a message of a session not seen (yet): its session record comes first
	}
	root := m.Root(in.SessionID)
	if root == "" {
		return nil
	}
	var out []Out
	if in.Role == "user" || in.Completed != 0 {
		out = m.moveOn(out, root, in.SessionID)
	}
	switch in.Role {
	case "user":
		if s.parent != "" || in.ID <= s.turn {
			return out // a subagent's prompt is its parent's tool call; an old turn is not opened again
		}
		s.turn = in.ID
		clear(s.tools)
		out = append(out, Out{root, agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: in.ID, OccurredAt: in.Created}})
	case "assistant":
		if s.parent == "" {
			if mod := validate.Model(in.Model); mod != "" && mod != s.model {
				s.model = mod
				out = append(out, Out{root, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Model: mod}})
			}
		}
		if in.Completed == 0 || in.ID <= s.ended {
			return out
		}
		outcome := agentbridge.OutcomeSuccess
		switch {
		case in.Error == "MessageAbortedError":
			outcome = agentbridge.OutcomeCancelled
		case in.Error != "":
			outcome = agentbridge.OutcomeError
		case in.Finish == "tool-calls":
			// more steps follow, unless the user rejected one of the calls
			// (opencode then stops the turn)
			s.toolCalls = in.ID
			if s.rejected != in.ID {
				return out
			}
			outcome = agentbridge.OutcomeCancelled
		}
		out = m.endTurn(out, root, in.SessionID, s, in.ID, outcome, in.Completed)
		if n := len(out); n > 0 && outcome == agentbridge.OutcomeError && out[n-1].Event.Kind == agentbridge.KindAgentDone {
			out[n-1].Event.Summary = validate.ErrorText(in.ErrorText)
		}
		return out
	}
	return out
}

// endTurn ends the turn of session id with assistant message msg: agent.done
// for a root, subagent.done on the root for a subagent.
func (m *Mapper) endTurn(out []Out, root, id string, s *session, msg string, outcome agentbridge.Outcome, at int64) []Out {
	if msg <= s.ended {
		return out
	}
	s.ended = msg
	clear(s.tools)
	if s.parent != "" {
		if s.started && !s.done {
			s.done = true
			out = append(out, Out{root, agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: id, Outcome: outcome}})
		}
		return out
	}
	s.wait, s.waitPart, s.waitOwner = "", "", "" // agent.done closes waits
	return append(out, Out{root, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: outcome, OccurredAt: at}})
}

// rejected reports whether a tool's error is opencode's for a call the
// user rejected or a question dismissed, which stops the turn (the
// rejection with feedback lets it go on).
func rejected(errText string) bool {
	return (strings.HasPrefix(errText, "The user rejected permission to use this specific tool call") &&
		!strings.Contains(errText, "feedback")) || strings.HasPrefix(errText, "The user dismissed")
}

func (m *Mapper) part(in *PartInfo) []Out {
	s := m.s[in.SessionID]
	if s == nil || in.ID == "" {
		return nil
	}
	root := m.Root(in.SessionID)
	if root == "" {
		return nil
	}
	var out []Out
	switch in.Type {
	case "text":
		if s.parent == "" && !in.Synthetic && in.MessageID == s.turn && s.title == "" {
			if t := validate.Title(in.Text); t != "" {
				out = append(out, Out{root, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, PromptText: t}})
			}
		}
		return out
	case "step-start", "step-finish":
		return m.moveOn(out, root, in.SessionID)
	case "tool":
	default:
		return out
	}
	var open, final bool
	switch in.Status {
	case "pending", "running":
		open = true
	case "completed", "error":
		final = true
	default:
		m.Skipped[CodeUnknownStatus]++
		return out
	}
	if r := m.s[root]; final && r.waitPart == in.ID {
		out = m.moveOn(out, root, in.SessionID)
	}
	if s.tools == nil {
		s.tools = map[string]tool{}
	}
	m.live(in.SessionID, s)
	_, isOpen := s.tools[in.ID]
	name := validate.Label(in.Tool)
	switch {
	case open && !isOpen && in.MessageID > s.ended:
		s.tools[in.ID] = tool{name, in.Started}
		if s.parent == "" { // a subagent's tools are not the root's
			out = append(out, Out{root, agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: in.ID, Name: name}})
		}
	}
	switch {
	case final && isOpen:
		delete(s.tools, in.ID)
		if s.parent == "" {
			outcome := agentbridge.OutcomeSuccess
			if in.Status == "error" {
				outcome = agentbridge.OutcomeError
			}
			out = append(out, Out{root, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: in.ID, Outcome: outcome}})
		}
	}
	if final && in.Status == "error" && rejected(in.Error) && in.MessageID > s.ended {
		s.rejected = in.MessageID
		if s.toolCalls == in.MessageID { // its message completed first (a scan reads parts after their message)
			out = m.endTurn(out, root, in.SessionID, s, in.MessageID, agentbridge.OutcomeCancelled, 0)
		}
	}
	return out
}

// Ask maps a permission request from opencode's log to wait.started on
// the root of the session whose tool part is waiting for it. The session
// is the one the log's run named last (a.Session) when it has a tool
// running, else the only session with a running tool of that name, else
// the only session with a running tool at all. ok is false when no
// session fits: a request whose tool has moved on already (read from an
// old log) or cannot be placed.
func (m *Mapper) Ask(a Ask) (out []Out, ok bool) {
	owner, part := m.asker(a)
	if owner == "" {
		return nil, false
	}
	root := m.Root(owner)
	r := m.s[root]
	if root == "" || !r.started || r.wait == a.ID {
		return nil, root != ""
	}
	if r.wait != "" {
		out = append(out, Out{root, agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: r.wait}})
	}
	r.wait, r.waitPart, r.waitOwner = a.ID, part, owner
	out = append(out, Out{root, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: a.ID,
		State: agentbridge.StatusWaiting, Reason: askReason(a)}})
	return out, true
}

// asker finds the session and tool part a permission request is for.
func (m *Mapper) asker(a Ask) (owner, part string) {
	for id, s := range m.s {
		m.live(id, s)
	}
	if s := m.s[a.Session]; s != nil {
		if p := pickTool(s.tools, a); p != "" {
			return a.Session, p
		}
	}
	var byName, any []string
	for id, s := range m.s {
		if p := pickTool(s.tools, a); p != "" {
			any = append(any, id)
			if s.tools[p].name == a.Permission {
				byName = append(byName, id)
			}
		}
	}
	switch {
	case len(byName) == 1:
		return byName[0], pickTool(m.s[byName[0]].tools, a)
	case len(any) == 1:
		return any[0], pickTool(m.s[any[0]].tools, a)
	}
	return "", ""
}

// pickTool returns the latest open tool part named like the permission,
// else the latest open one (part ids grow with time), among those that
// started before the request was logged (a request logged earlier was
// for another call).
func pickTool(tools map[string]tool, a Ask) string {
	var named, latest string
	for id, t := range tools {
		if a.At > 0 && t.start > a.At {
			continue
		}
		if t.name == a.Permission && id > named {
			named = id
		}
		if id > latest {
			latest = id
		}
	}
	if named != "" {
		return named
	}
	return latest
}

// askReason is what a permission wait shows: the permission and the
// patterns it is asked for, e.g. "bash: git push".
func askReason(a Ask) string {
	perm := validate.Label(a.Permission)
	var pats []string
	for _, p := range a.Patterns {
		if p != "" && p != "*" {
			pats = append(pats, p)
		}
		if len(pats) == 4 {
			break
		}
	}
	if len(pats) == 0 {
		return perm
	}
	what := validate.Title(strings.Join(pats, ", "))
	if perm == "" {
		return what
	}
	return text.Bound(perm+": "+what, validate.MaxWaitingFor)
}

// moveOn ends the permission wait shown on root when its owner session
// (the one whose tool part asked) moved on: the part finished, a step
// ended or began, the message completed, or a new turn came.
func (m *Mapper) moveOn(out []Out, root, owner string) []Out {
	r := m.s[root]
	if r == nil || r.wait == "" || r.waitOwner != owner {
		return out
	}
	out = append(out, Out{root, agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: r.wait}})
	r.wait, r.waitPart, r.waitOwner = "", "", ""
	return out
}
