// Package cursor reports the sessions of Cursor's agent CLI
// (cursor-agent). It writes one JSON-lines transcript per conversation at
// ~/.cursor/projects/<slug>/agent-transcripts/<uuid>/<uuid>.jsonl, and a
// subagent's at …/agent-transcripts/<parent uuid>/subagents/<uuid>.jsonl.
// The lines carry almost nothing: {role, message:{content:[text |
// tool_use | …]}} with no ids and no times, and since mid-2026 a roleless
// {"type":"turn_ended","status"} at the end of each turn. The mapping is
// record.go (pure), the project slug's decoding slug.go, the rules
// README.md.
package cursor

import (
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// The source's identity.
const (
	ID          = "cursor"
	DisplayName = "Cursor"
	Harness     = "cursor-agent"
)

// agent is the source: its identity, its transcripts and their handler
// (newHandler).
var agent = &sources.Agent{
	Single: sources.Single{
		ID: ID, DisplayName: DisplayName, Harness: Harness, HarnessName: "Cursor Agent",
		DefaultHome: sources.HomeUnder(".cursor"),
		Observes: map[string]agentbridge.Observe{
			"waiting":   {How: agentbridge.Unavailable},               // approvals are not written to the transcript
			"exited":    {How: agentbridge.Inferred, From: "process"}, // the cursor-agent process in the session's cwd, then a pidfd
			"subagents": {How: agentbridge.Observed, From: "journal"}, // subagents/<uuid>.jsonl beside the parent's transcript
			"title":     {How: agentbridge.Observed, From: "journal"}, // the first prompt
			"model":     {How: agentbridge.Unavailable},               // the transcript does not name it
		},
	},
	Process: Agent,
	Tail: func(o sources.Options) sources.TailConfig {
		root := projectsRoot(o.Home)
		return sources.TailConfig{
			Roots: []string{root},
			Match: func(p string) bool { _, ok := parsePath(root, p); return ok },
			Dirs:  func(p string) bool { return descend(root, p) },
		}
	},
	Handler: sources.HandlerFunc(func(o sources.Options, ss *sources.Sessions) sources.Handler {
		return newHandler(ss, projectsRoot(o.Home))
	}),
}

func init() { sources.RegisterAgent(agent) }

// Source reports cursor-agent's sessions. It implements hub.Source.
type Source = sources.AgentSource

// New returns the source for opt.Home (~/.cursor); it touches nothing
// until Run.
func New(opt sources.Options) *Source { return agent.New(opt) }

// ProjectsDir returns where Cursor under home keeps its projects.
func ProjectsDir(home string) string { return filepath.Join(home, "projects") }

// projectsRoot is ProjectsDir(home), cleaned: the root the transcripts'
// paths are parsed against.
func projectsRoot(home string) string { return filepath.Clean(ProjectsDir(home)) }

// Agent says which processes are cursor-agent's: its launcher runs the
// Node it ships with on its script, both kept in the install's
// …/cursor-agent/versions/<version>/ directory (the runtime's binder takes
// the innermost process of a chain).
var Agent = proc.Agent{Names: []string{"cursor-agent"}, Runtimes: []string{"node"}, Packages: []string{"cursor-agent"}}

// find asks for the process of a session written at path: the
// cursor-agent process in its cwd (any cwd, but one no other session has,
// when the project's slug names no one directory), running when the
// transcript was last written, holding it open if several are.
func (h *handler) find(id, cwd, path string) {
	h.FindProcess(id, sources.ProcQuery{Cwd: cwd, AnyCwd: cwd == "", Wrote: path, Journal: path})
}

// transcript is where a transcript sits.
type transcript struct {
	slug    string
	session string // the root session's id (the parent's, for a subagent)
	sub     string // the subagent's id, or "" for the root transcript
}

// parsePath reads a transcript path below root:
// <slug>/agent-transcripts/<id>/<id>.jsonl (a session) or
// <slug>/agent-transcripts/<parent>/subagents/<id>.jsonl (a subagent).
func parsePath(root, p string) (transcript, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return transcript{}, false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) < 4 || parts[1] != "agent-transcripts" || !validate.ValidID(parts[2]) {
		return transcript{}, false
	}
	stem, ok := strings.CutSuffix(parts[len(parts)-1], ".jsonl")
	if !ok || !validate.ValidID(stem) {
		return transcript{}, false
	}
	switch {
	case len(parts) == 4 && stem == parts[2]:
		return transcript{slug: parts[0], session: stem}, true
	case len(parts) == 5 && parts[3] == "subagents" && stem != parts[2]:
		return transcript{slug: parts[0], session: parts[2], sub: stem}, true
	}
	return transcript{}, false
}

// descend picks the directories that can hold transcripts: <slug>,
// <slug>/agent-transcripts, <slug>/agent-transcripts/<id> and its
// subagents.
func descend(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	switch len(parts) {
	case 1:
		return true
	case 2:
		return parts[1] == "agent-transcripts"
	case 3:
		return parts[1] == "agent-transcripts" && validate.ValidID(parts[2])
	case 4:
		return parts[1] == "agent-transcripts" && parts[3] == "subagents"
	}
	return false
}

// subagent is what the handler keeps of a subagent transcript.
type subagent struct {
	started, done bool
}

// handler maps transcript lines to events; Sessions does the rest. It
// runs on the source's goroutine only.
type handler struct {
	*sources.Sessions
	root  string
	maps  map[string]*mapper   // root transcripts, by session
	lines map[string]int       // lines seen, by path
	subs  map[string]*subagent // subagent transcripts, by path
	cwds  map[string]string    // decoded slugs
	buf   []agentbridge.Event
	sub   mapper // decode scratch for subagent lines
}

func newHandler(ss *sources.Sessions, root string) *handler {
	return &handler{
		Sessions: ss, root: root, maps: map[string]*mapper{}, lines: map[string]int{},
		subs: map[string]*subagent{}, cwds: map[string]string{},
	}
}

// Line maps one line: a session's transcript to its events, a subagent's
// to the subagent's start and end on its parent session.
func (h *handler) Line(path string, line []byte) {
	tr, ok := parsePath(h.root, path)
	if !ok {
		return
	}
	h.lines[path]++
	n := h.lines[path]
	if tr.sub != "" {
		h.subLine(path, tr, n, line)
		return
	}
	m := h.maps[tr.session]
	if m == nil {
		m = &mapper{cwd: h.cwd(tr.slug)}
		h.maps[tr.session] = m
	}
	var code string
	h.buf, code = m.Map(h.View(tr.session), n, line, h.buf[:0])
	if code != "" {
		h.BadLine(code)
	}
	for _, e := range h.buf {
		h.Event(tr.session, Harness, e)
	}
	if len(h.buf) > 0 {
		h.find(tr.session, m.cwd, path)
	}
}

// subLine reports a subagent: its first line starts it (titled by its
// first prompt), its turn_ended ends it. Its other lines are its own work.
func (h *handler) subLine(path string, tr transcript, n int, line []byte) {
	s := h.subs[path]
	if s == nil {
		s = &subagent{}
		h.subs[path] = s
	}
	if s.done {
		return
	}
	h.sub = mapper{started: true}
	var code string
	h.buf, code = h.sub.Map(fold.ViewOf(nil), n, line, h.buf[:0])
	if code != "" {
		h.BadLine(code)
		return
	}
	if !s.started {
		s.started = true
		title := ""
		if h.sub.rec.Role == "user" {
			if text, ok := h.sub.content(); ok {
				title = validate.Title(Prompt(text))
			}
		}
		h.Event(tr.session, Harness, agentbridge.Event{
			Kind: agentbridge.KindSubagentStarted, SubagentID: tr.sub, ParentAgentID: tr.session,
			Type: "subagent", Title: title,
		})
	}
	if h.sub.rec.Role == "" && h.sub.rec.Type == "turn_ended" {
		s.done = true
		h.Event(tr.session, Harness, agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: tr.sub, Outcome: Outcome(h.sub.rec.Status)})
	}
}

// cwd decodes a project slug once (it may probe the file system).
func (h *handler) cwd(slug string) string {
	c, ok := h.cwds[slug]
	if !ok {
		c = DecodeSlug(slug, dirExists)
		h.cwds[slug] = c
	}
	return c
}

// Rescan drops every mapper and count: all transcripts are read again.
func (h *handler) Rescan() {
	clear(h.maps)
	clear(h.lines)
	clear(h.subs)
	clear(h.cwds)
	h.Sessions.Rescan()
}

// Truncated drops what the transcript said: it is read again from the
// start. A subagent's start and end stay reported (its parent still lists
// it).
func (h *handler) Truncated(path string) {
	tr, ok := parsePath(h.root, path)
	if !ok {
		return
	}
	if h.forget(path, tr) {
		h.Restart(tr.session)
	}
}

// Removed ends the session when its own transcript goes; a subagent's
// going changes nothing (its parent keeps it listed as it ended).
func (h *handler) Removed(path string) {
	tr, ok := parsePath(h.root, path)
	if !ok {
		return
	}
	if h.forget(path, tr) {
		h.Stop(tr.session, "transcript removed")
	}
}

// forget drops what a transcript said and reports whether it was a
// session's own. A subagent's is marked done instead: should its lines
// come again (read again, or the file back), they are not a new subagent.
func (h *handler) forget(path string, tr transcript) bool {
	delete(h.lines, path)
	if tr.sub != "" {
		if s := h.subs[path]; s != nil {
			s.done = true
		}
		return false
	}
	delete(h.maps, tr.session)
	return true
}
