// Package gemini is the source of Google's Gemini CLI and its successor
// Antigravity CLI (agy), two harnesses that share the home ~/.gemini
// (GEMINI_CLI_HOME names the directory that holds .gemini):
//
//   - gemini-cli: chats at tmp/<project>/chats/session-<time>-<id8>.jsonl,
//     an upsert log (chat.go); subagents' chats at
//     tmp/<project>/chats/<parent session id>/<id>.jsonl. The project
//     directory's .project_root file names the working directory.
//   - antigravity-cli: antigravity-cli/brain/<conversation>/
//     .system_generated/logs/transcript.jsonl, one step a line (brain.go);
//     never transcript_full.jsonl. A subagent is a conversation of its own,
//     named by the parent's INVOKE_SUBAGENT step.
//
// The mapping is in README.md beside this file.
package gemini

import (
	"path/filepath"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// The source's identity.
const (
	ID                 = "gemini"
	DisplayName        = "Gemini"
	HarnessGemini      = "gemini-cli"
	HarnessAntigravity = "antigravity-cli"
	EnvHome            = "GEMINI_CLI_HOME" // the directory that holds .gemini
)

// agent describes the source: two harnesses under one home, each
// followed only while switched on (RootsFor).
var agent = &sources.Agent{
	Single: sources.Single{
		ID: ID, DisplayName: DisplayName,
		Harnesses: []agentbridge.Harness{
			{ID: HarnessAntigravity, DisplayName: "Antigravity CLI"},
			{ID: HarnessGemini, DisplayName: "Gemini CLI"},
		},
		Env:         []string{EnvHome}, // no HomeEnv: GEMINI_CLI_HOME names the parent of .gemini, resolved by DefaultHome
		DefaultHome: defaultHome,
		Observes: map[string]agentbridge.Observe{
			"waiting": {How: agentbridge.Unavailable}, // confirmations are not written before they are answered
			// Gemini CLI: the process running in the chat's project (procs.go),
			// its exit seen with a pidfd; Antigravity: no process is known,
			// its sessions expire after the window.
			"exited":    {How: agentbridge.Inferred, From: "process"},
			"subagents": {How: agentbridge.Observed, From: "journal"},
			"title":     {How: agentbridge.Observed, From: "journal"},
			"model":     {How: agentbridge.Observed, From: "journal"},
		},
		Hooks: &hookVocabulary,
	},
	Tail: func(o sources.Options) sources.TailConfig {
		chats, brain := chatsRoot(o), brainRoot(o)
		return sources.TailConfig{
			Roots: []string{chats, brain},
			Match: func(p string) bool { return kindOf(chats, brain, p) != nil },
			Dirs:  func(p string) bool { return descend(chats, brain, p) },
		}
	},
	RootsFor: func(o sources.Options, enabled []string) []string {
		var roots []string
		for _, h := range enabled {
			switch h {
			case HarnessAntigravity:
				roots = append(roots, brainRoot(o))
			case HarnessGemini:
				roots = append(roots, chatsRoot(o))
			}
		}
		return roots
	},
	Handler: sources.HandlerFunc(func(o sources.Options, ss *sources.Sessions) sources.Handler {
		return &handler{Sessions: ss, chats: chatsRoot(o), brain: brainRoot(o), files: map[string]*file{}, childOf: map[string]string{}, cwds: map[string]string{},
			held: map[string]int{}, asked: map[string]string{}, gone: map[string]chatMeta{}, history: filepath.Join(o.Home, "antigravity-cli", "history.jsonl")}
	}),
}

// defaultHome is $GEMINI_CLI_HOME/.gemini when that is absolute, else
// ~/.gemini.
func defaultHome(getenv func(string) string) string {
	if h := getenv(EnvHome); filepath.IsAbs(h) {
		return filepath.Join(h, ".gemini")
	}
	return sources.HomeUnder(".gemini")(getenv)
}

func init() { sources.RegisterAgent(agent) }

// Source follows both harnesses' files under one home. It implements
// hub.Source.
type Source = sources.AgentSource

// New returns the source for o.Home (the .gemini directory).
func New(o sources.Options) *Source { return agent.New(o) }

func chatsRoot(o sources.Options) string { return filepath.Join(o.Home, "tmp") }
func brainRoot(o sources.Options) string { return filepath.Join(o.Home, "antigravity-cli", "brain") }

// where says what a followed file is.
type where struct {
	harness string
	id      string // the session (gemini-cli: known from the first line) or conversation id
	parent  string // gemini-cli subagent chats: the parent session id
	project string // gemini-cli: the project directory (tmp/<project>)
	legacy  bool   // gemini-cli ≤ 0.39: a whole .json chat, rewritten in full
}

// kindOf recognises the files the source follows; nil for any other.
func kindOf(chats, brain, p string) *where {
	if rel, ok := below(chats, p); ok {
		parts := strings.Split(rel, "/")
		switch {
		case len(parts) == 3 && parts[1] == "chats" && strings.HasPrefix(parts[2], "session-") && strings.HasSuffix(parts[2], ".jsonl"):
			return &where{harness: HarnessGemini, project: filepath.Join(chats, parts[0])}
		case len(parts) == 3 && parts[1] == "chats" && strings.HasPrefix(parts[2], "session-") && strings.HasSuffix(parts[2], ".json"):
			return &where{harness: HarnessGemini, project: filepath.Join(chats, parts[0]), legacy: true}
		case len(parts) == 4 && parts[1] == "chats" && strings.HasSuffix(parts[3], ".jsonl") && validate.ValidID(parts[2]):
			return &where{harness: HarnessGemini, parent: parts[2], project: filepath.Join(chats, parts[0])}
		}
		return nil
	}
	if rel, ok := below(brain, p); ok {
		parts := strings.Split(rel, "/")
		if len(parts) == 4 && parts[1] == ".system_generated" && parts[2] == "logs" && parts[3] == "transcript.jsonl" && validate.ValidID(parts[0]) {
			return &where{harness: HarnessAntigravity, id: parts[0]}
		}
	}
	return nil
}

// descend picks the directories on the way to the followed files.
func descend(chats, brain, p string) bool {
	if rel, ok := below(chats, p); ok {
		parts := strings.Split(rel, "/")
		return len(parts) == 1 || (len(parts) == 2 && parts[1] == "chats") || (len(parts) == 3 && parts[1] == "chats")
	}
	if rel, ok := below(brain, p); ok {
		parts := strings.Split(rel, "/")
		return len(parts) == 1 || (len(parts) == 2 && parts[1] == ".system_generated") || (len(parts) == 3 && parts[2] == "logs")
	}
	return false
}

func below(root, p string) (string, bool) {
	rel, ok := strings.CutPrefix(p, root+"/")
	return rel, ok && rel != ""
}

// file is one followed file and its mapping state.
type file struct {
	where
	path       string
	chat       *Chat
	brain      *Brain
	superseded bool // a legacy chat that Gemini CLI migrated to a .jsonl
	rebuild    bool // the session is rebuilt at the end of the wake (see flushRebuilds)
}

// maxGone bounds the deleted chats remembered for Chat.Continue.
const maxGone = 64

// maxLegacyChat bounds a legacy whole-file chat (read in full on every
// change, as Gemini CLI rewrites it in full).
const maxLegacyChat = 32 << 20

// MatchWhole picks the files the runtime reads whole on every change
// (sources.WholeFiles): the legacy .json chats and each project's
// .project_root.
func (h *handler) MatchWhole(p string) bool {
	if projectDir(h.chats, p) != "" {
		return true
	}
	w := kindOf(h.chats, h.brain, p)
	return w != nil && w.legacy
}

// projectDir returns the project directory whose .project_root p is, or "".
func projectDir(chats, p string) string {
	rel, ok := below(chats, p)
	if parts := strings.Split(rel, "/"); ok && len(parts) == 2 && parts[1] == ".project_root" {
		return filepath.Join(chats, parts[0])
	}
	return ""
}

// projectRoot takes the working directory Gemini CLI recorded for a
// project (nil: the file went away) and gives it to the project's
// sessions, those already shown included.
func (h *handler) projectRoot(dir string, data []byte) {
	cwd := ""
	if data != nil {
		cwd = validate.CleanCwd(strings.TrimSpace(string(data)))
	}
	if cwd == "" {
		delete(h.cwds, dir)
		return // a cwd once known is not taken back
	}
	h.cwds[dir] = cwd
	for _, f := range h.files {
		if f.chat == nil || f.project != dir {
			continue
		}
		f.chat.SetCwd(cwd)
		if f.id != "" && f.parent == "" && !f.chat.Subagent() && !f.superseded {
			h.Event(f.id, f.harness, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: cwd})
		}
	}
}

// WholeLimit lets a legacy chat be larger than a sidecar.
func (h *handler) WholeLimit(string) int64 { return maxLegacyChat }

// legacyChat is the whole-file ConversationRecord of Gemini CLI 0.39 and
// older.
type legacyChat struct {
	SessionID   string         `json:"sessionId"`
	ProjectHash string         `json:"projectHash"`
	StartTime   string         `json:"startTime"`
	Kind        string         `json:"kind"`
	Messages    jsontext.Value `json:"messages"`
}

// WholeFile maps a legacy chat as it stands now: the metadata as the
// first record, its messages as a replaced history (so that what a
// rewrite dropped is undone). nil: the file is gone.
func (h *handler) WholeFile(p string, data []byte) {
	if dir := projectDir(h.chats, p); dir != "" {
		h.projectRoot(dir, data)
		return
	}
	if data == nil {
		h.Removed(p)
		return
	}
	f := h.file(p)
	if f == nil || f.superseded {
		return
	}
	var lc legacyChat
	if json.Unmarshal(data, &lc) != nil || lc.SessionID == "" {
		h.BadLine(sources.CodeInvalidJSON)
		return
	}
	if !f.chat.known {
		meta, _ := json.Marshal(chatMeta{SessionID: lc.SessionID, ProjectHash: lc.ProjectHash, StartTime: lc.StartTime, Kind: lc.Kind})
		h.chatLine(f, meta)
	}
	msgs := lc.Messages
	if len(msgs) == 0 {
		msgs = jsontext.Value("[]")
	}
	h.chatLine(f, append(append([]byte(`{"$set":{"messages":`), msgs...), "}}"...))
}

// supersede retires the legacy chat of session id when Gemini CLI has
// migrated it to a .jsonl chat (it does on resume): the session is
// rebuilt from the new file alone.
func (h *handler) supersede(id string) bool {
	found := false
	for _, f := range h.files {
		if f.legacy && !f.superseded && f.id == id {
			f.superseded, found = true, true
		}
	}
	return found
}

// handler maps lines to events; Sessions does the rest. It runs on the
// source's goroutine only.
type handler struct {
	*sources.Sessions
	chats, brain string
	files        map[string]*file
	childOf      map[string]string   // antigravity: child conversation → parent conversation
	cwds         map[string]string   // gemini-cli project directory → its .project_root
	held         map[string]int      // a deleted chat's path → its live process, taken until the chat is written again
	asked        map[string]string   // antigravity session → its transcript, written this wake: its process is asked for at Idle
	gone         map[string]chatMeta // a deleted chat's path → its metadata, for the CLI that appends to it again (Chat.Continue)
	history      string              // Antigravity CLI's history.jsonl (procs.go)
	rebuilds     []*file             // chats to rebuild at the end of the wake
}

func (h *handler) file(p string) *file {
	if f := h.files[p]; f != nil {
		return f
	}
	w := kindOf(h.chats, h.brain, p)
	if w == nil {
		return nil
	}
	f := &file{where: *w, path: p}
	if f.harness == HarnessGemini {
		f.chat = &Chat{Whole: f.legacy}
		f.chat.SetCwd(h.cwds[f.project])
		if meta, ok := h.gone[p]; ok {
			delete(h.gone, p)
			delete(h.held, p) // its process is asked for again when it is written
			f.chat.Continue(meta)
		}
	} else {
		f.brain = &Brain{}
	}
	h.files[p] = f
	return f
}

// Line maps one line of the file at p.
func (h *handler) Line(p string, line []byte) {
	f := h.file(p)
	if f == nil {
		return
	}
	if f.chat != nil {
		h.chatLine(f, line)
		return
	}
	h.brainLine(f, line)
}

func (h *handler) chatLine(f *file, line []byte) {
	ch, events, code := f.chat.Line(line)
	if code != "" {
		h.BadLine(code)
		return
	}
	h.chatChanged(f, ch, events)
}

// LongLine takes what the head of a chat record too long to read says
// (sources.LongLines): a reply's tool calls, a prompt (Chat.LongLine).
// The tailer counts the line as skipped (line-too-long) all the same.
func (h *handler) LongLine(p string, head []byte) {
	f := h.file(p)
	if f == nil || f.chat == nil || f.legacy {
		return
	}
	ch, events := f.chat.LongLine(head)
	if ch != Unchanged {
		h.chatChanged(f, ch, events)
	}
}

// chatChanged reports what a record did to f's chat.
func (h *handler) chatChanged(f *file, ch Change, events []agentbridge.Event) {
	fresh := f.id == ""
	f.id = f.chat.SessionID()
	if f.id == "" {
		return
	}
	if fresh && !f.legacy && h.supersede(f.id) {
		ch = Rebuilt // the migrated chat replaces what the legacy one said
	}
	ends := f.chat.TakeEnds()
	if f.parent != "" || f.chat.Subagent() {
		h.subagentChat(f, ch, events)
		return
	}
	for _, end := range ends {
		h.endSubagent(f.id, end.ID, end.Outcome)
	}
	switch ch {
	case Appended:
		if f.rebuild {
			break // the rebuild at the end of the wake replays them
		}
		for _, e := range events {
			h.Event(f.id, f.harness, e)
		}
	case Rebuilt:
		// Rebuilt once per wake, however many rewinds the wake read (a
		// rebuild replays the whole chat).
		f.rebuild = true
		h.rebuilds = append(h.rebuilds, f)
	}
	if hash := f.chat.ProjectHash(); f.harness == HarnessGemini && hash != "" {
		project := f.project
		h.FindProcess(f.id, sources.ProcQuery{Agent: Agent, CwdMatch: func(cwd string) bool { return cwd == h.cwds[project] || projectHash(cwd) == hash },
			Wrote: f.path, Taken: h.taken})
	}
}

// Idle rebuilds the sessions this wake's rewinds left to rebuild, asks
// for the processes of the Antigravity sessions written in this wake,
// then lets Sessions find them (one pass over /proc for all) and flush.
func (h *handler) Idle() {
	h.flushRebuilds()
	h.askAntigravity()
	h.Sessions.Idle()
}

// ScanDone rebuilds the sessions the scan's rewinds left to rebuild, asks
// for the processes of the Antigravity sessions the scan read, then lets
// Sessions find them and publish the reset.
func (h *handler) ScanDone() {
	h.flushRebuilds()
	h.askAntigravity()
	h.Sessions.ScanDone()
}

// flushRebuilds rebuilds the sessions whose chat said, since the last
// wake, that the events reported before no longer hold: the session's
// state dropped, every event of the chat replayed. A wake that reads 5,000
// rewinds of a long chat rebuilds it once.
func (h *handler) flushRebuilds() {
	for _, f := range h.rebuilds {
		if !f.rebuild || h.files[f.path] != f {
			continue // read again from the start, or gone, meanwhile
		}
		f.rebuild = false
		exited := h.Exited(f.id)
		h.Restart(f.id)
		for _, e := range f.chat.Events() {
			h.Event(f.id, f.harness, e)
		}
		if exited {
			// The rebuilt session keeps its exit (the runtime keeps a
			// live process on it).
			h.Event(f.id, f.harness, agentbridge.Event{Kind: agentbridge.KindAgentExited})
		}
		// The subagents its invoke_agent calls say are over (reported
		// before the rebuild, dropped by it) end again.
		if s := h.Get(f.id); s != nil {
			for _, sub := range s.Snapshot().Subagents {
				if out, ok := f.chat.End(sub.ID); ok && sub.Status == agentbridge.SubagentRunning {
					h.endSubagent(f.id, sub.ID, out)
				}
			}
		}
	}
	clear(h.rebuilds)
	h.rebuilds = h.rebuilds[:0]
}

// taken reports whether pid is the process of a chat deleted under it,
// which it may write again.
func (h *handler) taken(pid int) bool {
	for _, p := range h.held {
		if p == pid {
			return true
		}
	}
	return false
}

// subagentChat reports a subagent's chat on its parent session: started
// with its first line, done when its turn ends — or at once when the
// parent's chat already says it is over (its invoke_agent call finished).
func (h *handler) subagentChat(f *file, ch Change, events []agentbridge.Event) {
	parent := f.parent
	if parent == "" || ch != Appended {
		return
	}
	for _, e := range events {
		switch e.Kind {
		case agentbridge.KindSessionStarted:
			h.Event(parent, f.harness, agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: f.id, ParentAgentID: parent, Type: "subagent", OccurredAt: e.OccurredAt})
			if pf := h.chatFile(parent); pf != nil {
				if out, ok := pf.chat.End(f.id); ok {
					h.endSubagent(parent, f.id, out)
				}
			}
		case agentbridge.KindAgentDone:
			h.endSubagent(parent, f.id, e.Outcome)
		}
	}
}

// endSubagent reports subagent child of session parent done, when the
// parent lists it running: a subagent ends once (by its own complete_task
// or by the parent's invoke_agent call, whichever is read first), and only
// on the session that started it.
func (h *handler) endSubagent(parent, child string, out agentbridge.Outcome) {
	s := h.Get(parent)
	if s == nil {
		return
	}
	for _, sub := range s.Snapshot().Subagents {
		if sub.ID == child && sub.Status == agentbridge.SubagentRunning {
			h.Event(parent, HarnessGemini, agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: child, Outcome: out})
			return
		}
	}
}

// chatFile returns the followed main chat of session id, or nil.
func (h *handler) chatFile(id string) *file {
	for _, f := range h.files {
		if f.chat != nil && f.parent == "" && !f.superseded && f.id == id {
			return f
		}
	}
	return nil
}

func (h *handler) brainLine(f *file, line []byte) {
	events, code := f.brain.Line(f.id, line)
	if code != "" {
		h.BadLine(code)
		return
	}
	if parent, ok := h.childOf[f.id]; ok {
		h.childProgress(parent, f)
		return
	}
	for _, e := range events {
		h.Event(f.id, f.harness, e)
		if e.Kind == agentbridge.KindSubagentStarted {
			h.adopt(f.id, e.SubagentID)
		}
	}
	if len(events) > 0 && h.Get(f.id) != nil {
		h.asked[f.id] = f.path
	}
}

// adopt makes conversation child a subagent of parent: it is never a
// root session. A child already shown as one leaves; one that already
// finished is reported done.
func (h *handler) adopt(parent, child string) {
	h.childOf[child] = parent
	if f := h.brainFile(child); f != nil {
		h.Stop(child, "a subagent of another conversation")
		h.childProgress(parent, f)
	}
}

// childProgress reports a child conversation's end on its parent.
func (h *handler) childProgress(parent string, child *file) {
	if !child.brain.Done() {
		return
	}
	pf := h.brainFile(parent)
	if pf == nil {
		return
	}
	for _, e := range pf.brain.ChildDone(child.id, agentbridge.OutcomeSuccess, 0) {
		h.Event(parent, HarnessAntigravity, e)
	}
}

func (h *handler) brainFile(id string) *file {
	for _, f := range h.files {
		if f.brain != nil && f.id == id {
			return f
		}
	}
	return nil
}

// Truncated starts the file's mapping again: it is read from the start.
func (h *handler) Truncated(p string) {
	f := h.files[p]
	if f == nil {
		return
	}
	delete(h.files, p)
	if f.id != "" && f.parent == "" && h.childOf[f.id] == "" {
		h.Restart(f.id)
	}
}

// Removed ends the file's session (Gemini CLI deletes a chat with nothing
// to resume when it exits).
func (h *handler) Removed(p string) {
	f := h.files[p]
	delete(h.files, p)
	if f == nil || f.id == "" || f.parent != "" || f.superseded || h.childOf[f.id] != "" {
		return
	}
	delete(h.asked, f.id)
	if f.chat != nil && !f.legacy && !f.chat.Subagent() {
		// Its process may go on (the file was deleted under it) and write
		// it again: the process stays taken, so that it is not bound to
		// another chat of the project meanwhile.
		if len(h.gone) >= maxGone {
			clear(h.gone)
			clear(h.held)
		}
		h.gone[p] = f.chat.meta
		if s := h.Get(f.id); s != nil && s.PID() > 0 && !h.Exited(f.id) {
			h.held[p] = s.PID()
		}
	}
	h.Stop(f.id, "journal removed")
}

// Rescan drops the mapping state: every file is read again.
func (h *handler) Rescan() {
	clear(h.files)
	clear(h.childOf)
	clear(h.cwds)
	clear(h.held)
	clear(h.asked)
	clear(h.gone)
	clear(h.rebuilds)
	h.rebuilds = h.rebuilds[:0]
	h.Sessions.Rescan()
}

var _ hub.Source = (*Source)(nil)
