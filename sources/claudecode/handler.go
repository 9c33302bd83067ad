package claudecode

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
)

// Diagnostic codes of this source (besides those of package sources).
const (
	codeInvalidRegistry = "invalid-registry-file" // a sessions/<pid>.json that is not a registry entry
)

// handler is the tailer's Handler for Claude Code: it owns the mappers, the
// registry table and the subagent transcripts. All its methods run on the
// tailer's goroutine (sources.Follow).
type handler struct {
	*sources.Sessions
	log      *slog.Logger
	ss       *sources.Sessions
	projects string
	registry string
	jobs     string   // background sessions' state files (jobs.go)
	last     lineFile // the file of the last line, classified

	jobStates map[string]Job // by job directory

	sessions map[string]*session  // by published session id
	children map[string]*child    // by transcript path
	pending  map[string][]*child  // children waiting for their parent, by parent id
	metas    map[string]childMeta // subagent sidecars read, by transcript path
	regs     map[int]*regProc     // live processes by pid
	// reread: sessions whose transcript is being read again (truncated,
	// replaced or rewritten in place); the registry's state is applied to
	// the new mapper at Idle, after the lines, as a scan does.
	reread map[string]bool
}

// session is one root session's mapper and binding.
type session struct {
	m       *Mapper
	pid     int  // bound live process (registry), 0: none
	hasFile bool // its transcript exists
	exited  bool // the mapper ended its bound process itself (Mapper.Exited)

	// version: the Claude Code version its records named last
	version string
}

// regProc is one live process of the registry.
type regProc struct {
	entry RegistryEntry
	state RegistryState
	seq   int
	id    string // published id of the session it writes
}

// child is one subagent transcript.
type child struct {
	kind    fileKind
	parent  string // published parent session id
	agentID string
	meta    childMeta
	track   *Mapper // follows the child's own turn end when it may own its subagent
	ended   bool
	outcome agentbridge.Outcome
	endAt   int64
	joined  bool
	own     bool // the subagent was started from this transcript
	subID   string
	// metaWait: the join waits (metaGrace) for the .meta.json sidecar;
	// metaWaited: that wait is over.
	metaWait, metaWaited bool
}

// metaGrace is how long a subagent transcript found while the bridge is
// live waits for its .meta.json sidecar before it is joined without one.
// 2.1.2+ writes the sidecar first, but from another thread: on a loaded
// machine its rename can land after the transcript's first line, and a
// child joined without it would show as an untitled subagent of its own
// beside the one the parent's Agent tool starts. Versions without
// sidecars show their subagents this much later.
const metaGrace = 1500 * time.Millisecond

// metaSuffix ends a subagent transcript's sidecar, beside agent-<id>.jsonl.
const metaSuffix = ".meta.json"

// childMeta is the .meta.json sidecar of a 2.1.2+ subagent transcript.
type childMeta struct {
	AgentType   string `json:"agentType"`
	Description string `json:"description"`
	ToolUseID   string `json:"toolUseId"`
}

func newHandler(o Options, ss *sources.Sessions) *handler {
	return &handler{
		Sessions: ss, log: o.Logger, ss: ss, projects: projectsDir(o), registry: registryDir(o), jobs: jobsDir(o),
		jobStates: map[string]Job{},
		sessions:  map[string]*session{}, children: map[string]*child{},
		pending: map[string][]*child{}, metas: map[string]childMeta{}, regs: map[int]*regProc{},
		reread: map[string]bool{},
	}
}

// ---- tailer callbacks ----

// Line implements sources.Handler.
func (h *handler) Line(path string, line []byte) {
	f := &h.last
	if path != f.path { // lines come a read of one file at a time
		k, sid, agentID := classify(h.projects, path)
		*f = lineFile{path: path, k: k, sid: sid, agentID: agentID}
		if k == rootFile {
			f.id = SessionID(sid)
		}
	}
	switch f.k {
	case rootFile:
		h.rootLine(f.id, line)
	case childFile, besideFile:
		h.childLine(path, f.k, f.sid, f.agentID, line)
	}
}

// lineFile is what classify says of a path (and its published session id
// for a root transcript).
type lineFile struct {
	path, sid, agentID, id string
	k                      fileKind
}

func (h *handler) rootLine(id string, line []byte) {
	se := h.session(id)
	se.hasFile = true
	evs, err := se.m.Line(line)
	if err != nil {
		h.ss.BadLine(sources.CodeInvalidJSON)
		return
	}
	if v := se.m.Version(); v != "" && v != se.version {
		se.version = v
		h.ss.Version(Harness, v)
	}
	h.publish(id, se, evs)
	if len(h.jobStates) > 0 {
		h.applyJobs(id)
	}
}

// Idle implements sources.Handler: subagent transcripts found in this wake
// are joined now, after every transcript that changed was read (a new
// subagents directory is walked before its parent's transcript is read).
func (h *handler) Idle() {
	if h.Live() {
		for _, id := range slices.Sorted(maps.Keys(h.reread)) {
			delete(h.reread, id)
			for _, pid := range slices.Sorted(maps.Keys(h.regs)) {
				if rp := h.regs[pid]; rp.id == id {
					h.applyRegistry(rp, "")
				}
			}
		}
		for _, id := range slices.Sorted(maps.Keys(h.pending)) {
			if se := h.sessions[id]; se != nil && se.m.Started() {
				h.joinPending(id, true)
			}
		}
	}
	h.endLateTails()
	h.ss.Idle()
}

// Truncated implements sources.Handler: the transcript is read again from
// its start, into a fresh mapper, so that the session ends as a fresh read
// of the file would leave it: its subagent transcripts are joined again
// and the registry's state applied again once the lines are read (Idle).
func (h *handler) Truncated(path string) {
	switch k, sid, _ := classify(h.projects, path); k {
	case rootFile:
		id := SessionID(sid)
		if se := h.sessions[id]; se != nil {
			h.ss.Restart(id)
			se.m = h.newMapper(id)
			se.exited = false
			h.reread[id] = true
			for _, p := range slices.Sorted(maps.Keys(h.children)) {
				if c := h.children[p]; c.kind == childFile && c.parent == id && c.joined {
					c.joined, c.subID, c.own = false, "", false
					h.pending[id] = append(h.pending[id], c)
				}
			}
		}
	case childFile, besideFile:
		delete(h.children, path)
	}
}

// Removed implements sources.Handler: a removed transcript ends its
// session's observation.
func (h *handler) Removed(path string) {
	switch k, sid, _ := classify(h.projects, path); k {
	case rootFile:
		id := SessionID(sid)
		if _, ok := h.sessions[id]; ok {
			delete(h.sessions, id)
			h.ss.Stop(id, "transcript removed")
		}
	case childFile, besideFile:
		delete(h.children, path)
	}
}

// Rescan implements sources.Handler: everything taken from files is
// dropped, the registry table included (the scan reads it again first).
func (h *handler) Rescan() {
	h.ss.Rescan()
	clear(h.sessions)
	clear(h.children)
	clear(h.pending)
	clear(h.metas)
	clear(h.regs)
	clear(h.reread)
}

// ScanDone implements sources.Handler: it binds the sessions of live
// processes, reports as exited the sessions no live process writes (when
// this install keeps a registry), joins the subagent transcripts found,
// and sends the reset.
func (h *handler) ScanDone() {
	for _, pid := range slices.Sorted(maps.Keys(h.regs)) {
		h.applyRegistry(h.regs[pid], "")
	}
	for _, id := range slices.Sorted(maps.Keys(h.pending)) {
		if se := h.sessions[id]; se != nil && se.m.Started() {
			h.joinPending(id, false)
		}
	}
	if len(h.sessions) > 0 && h.registryExists() {
		for _, id := range slices.Sorted(maps.Keys(h.sessions)) {
			se := h.sessions[id]
			if se.pid == 0 && se.hasFile && !se.exited {
				se.exited = true
				h.publish(id, se, se.m.Exited(se.m.LastAt(), nil, ""))
			}
		}
	}
	h.ss.ScanDone()
}

// MatchWhole implements sources.WholeFiles: the registry's <pid>.json
// files and the subagents' .meta.json sidecars are read whole.
func (h *handler) MatchWhole(path string) bool {
	if filepath.Dir(path) == h.registry {
		return RegistryPID(filepath.Base(path)) != 0
	}
	if _, ok := jobOf(h.jobs, path); ok {
		return true
	}
	t, ok := transcriptOf(path)
	if !ok {
		return false
	}
	k, _, _ := classify(h.projects, t)
	return k == childFile
}

// WholeFile implements sources.WholeFiles.
func (h *handler) WholeFile(path string, data []byte) {
	if filepath.Dir(path) == h.registry {
		h.registryFile(regFile{pid: RegistryPID(filepath.Base(path)), data: data})
		return
	}
	if _, ok := jobOf(h.jobs, path); ok {
		h.jobFileRead(path, data)
		return
	}
	if t, ok := transcriptOf(path); ok {
		h.metaFile(t, data)
	}
}

// transcriptOf returns the subagent transcript a .meta.json sidecar
// describes.
func transcriptOf(meta string) (string, bool) {
	stem, ok := strings.CutSuffix(meta, metaSuffix)
	return stem + ".jsonl", ok
}

// Recent is the tailer's Recent: at a scan, a registry file is read
// whatever its age (an idle process does not rewrite it), an old
// transcript when a live process in the registry writes it, and a
// sidecar when its transcript was read. It implements
// sources.RecentFiles (TailConfig.Recent).
func (h *handler) Recent(path string, _ fs.FileInfo) bool {
	if filepath.Dir(path) == h.registry {
		return true
	}
	if _, ok := jobOf(h.jobs, path); ok {
		return true // a blocked job may wait for days
	}
	if t, ok := transcriptOf(path); ok {
		return h.children[t] != nil
	}
	k, sid, _ := classify(h.projects, path)
	if k != rootFile {
		return false
	}
	id := SessionID(sid)
	for _, rp := range h.regs {
		if rp.id == id {
			return true
		}
	}
	return false
}

// ---- sessions ----

func (h *handler) newMapper(id string) *Mapper {
	view := func() fold.View { return h.ss.View(id) }
	m := NewMapper(id, MapperOptions{InferWaits: true, View: view})
	for _, pid := range slices.Sorted(maps.Keys(h.regs)) {
		if rp := h.regs[pid]; rp.id == id {
			m = NewMapper(id, MapperOptions{InferWaits: rp.entry.Status == RegistryNone, View: view})
			m.SetOrigin(pid, rp.entry.Cwd, rp.entry.StartedAt)
		}
	}
	return m
}

func (h *handler) session(id string) *session {
	se := h.sessions[id]
	if se == nil {
		se = &session{m: h.newMapper(id)}
		h.sessions[id] = se
	}
	return se
}

// publish folds the events into the session (Sessions publishes them once
// the scan is over). A session the bridge forgot (it stopped after
// exiting) is restated first.
func (h *handler) publish(id string, se *session, evs []agentbridge.Event) {
	if len(evs) == 0 {
		return
	}
	if h.ss.Get(id) == nil && evs[0].Kind != agentbridge.KindSessionStarted {
		h.ss.Event(id, Harness, se.m.Restate())
	}
	for _, e := range evs {
		h.ss.Event(id, Harness, e)
	}
}

// ---- the registry ----

func (h *handler) registryExists() bool {
	fi, err := os.Stat(h.registry)
	return err == nil && fi.IsDir()
}

// regFile is one registry file as read: data nil means removed.
type regFile struct {
	pid  int
	data []byte
}

// registryFile applies one registry file's new content; nil data means the
// file was removed: the process exited (cleanly). A half-written file is
// ignored: the last good state stays until the next write.
func (h *handler) registryFile(f regFile) {
	rp := h.regs[f.pid]
	if f.data == nil {
		h.log.Debug("registry file removed", "pid", f.pid, "known", rp != nil)
		if rp == nil {
			return
		}
		delete(h.regs, f.pid)
		if se := h.sessions[rp.id]; se != nil && se.pid == f.pid && h.Live() {
			h.exit(rp.id, se)
		}
		return
	}
	e, err := ParseRegistry(f.pid, f.data)
	h.log.Debug("registry file", "pid", f.pid, "live", h.Live(), "err", err, "session", e.SessionID, "status", e.Status)
	if errors.Is(err, ErrPartial) {
		return
	}
	if err != nil {
		h.ss.BadLine(codeInvalidRegistry)
		return
	}
	if rp == nil {
		if !isAgent(f.pid) {
			h.log.Debug("registry file names a process that is not Claude Code", "pid", f.pid)
			h.ss.BadLine(codeInvalidRegistry)
			return
		}
		rp = &regProc{}
		h.regs[f.pid] = rp
	}
	prev := rp.id
	rp.seq++
	rp.state = nextWait(rp.state, e, rp.seq)
	rp.entry = e
	rp.id = SessionID(e.SessionID)
	if h.Live() {
		h.applyRegistry(rp, prev)
	}
}

// isAgent reports whether pid may be a Claude Code process: a live process
// Agent matches, or none at all (a file left by a process that ended: the
// session is bound and exits at once).
func isAgent(pid int) bool {
	return !proc.Alive(pid, 0) || Agent.Match(proc.Root, pid)
}

// exit reports the end of a session's process, unless the bridge already
// folded it (Sessions saw the process end through its pidfd first: the
// mapper reads that end from the view).
func (h *handler) exit(id string, se *session) {
	se.pid = 0
	if se.exited || h.ss.Exited(id) {
		return
	}
	se.exited = true
	se.m.Gone(time.Now().UnixMilli())
	h.publish(id, se, se.m.Exited(0, nil, ""))
}

// applyRegistry binds a live process to the session it writes now and
// applies its status. When the process moved to another transcript (/clear,
// /resume), the session it left stops.
func (h *handler) applyRegistry(rp *regProc, prev string) {
	pid := rp.entry.PID
	if prev != "" && prev != rp.id {
		if old := h.sessions[prev]; old != nil && old.pid == pid {
			old.pid = 0
			old.exited = true
			old.m.Exited(0, nil, "")
			h.ss.Stop(prev, "the process moved to another session")
		}
	}
	se := h.session(rp.id)
	if se.pid != pid {
		// A new process (or one that took up a session whose process
		// exited: claude --resume): session.started with its pid binds it,
		// which cancels the exited session's linger (Sessions.BindPID).
		se.pid, se.exited = pid, false
		se.m.SetOrigin(pid, rp.entry.Cwd, rp.entry.StartedAt)
		if se.m.Started() {
			h.publish(rp.id, se, []agentbridge.Event{se.m.Restate()})
		} else {
			h.publish(rp.id, se, se.m.Start())
		}
	}
	h.publish(rp.id, se, se.m.Registry(rp.state, rp.entry.Changed))
	h.watchIdle(rp, se)
}

// ---- subagent transcripts ----

func (h *handler) childLine(path string, k fileKind, parentSID, agentID string, line []byte) {
	c := h.children[path]
	if c == nil {
		c = &child{kind: k, agentID: agentID}
		h.children[path] = c
		if k == besideFile {
			// 2.0.x: the sidechain's records name the parent session; its
			// lifecycle comes from the parent's Task tool, so the file is
			// only kept from becoming a root session.
			return
		}
		c.parent = SessionID(parentSID)
		c.meta = h.metas[path]
		if c.meta.ToolUseID == "" {
			c.track = NewMapper(c.parent, MapperOptions{Sidechain: true})
		}
		h.pending[c.parent] = append(h.pending[c.parent], c) // joined at Idle or ScanDone
	}
	if c.track == nil || c.ended {
		return
	}
	evs, err := c.track.Line(line)
	if err != nil {
		return
	}
	for _, e := range evs {
		if e.Kind == agentbridge.KindAgentDone {
			c.ended, c.outcome, c.endAt = true, e.Outcome, e.OccurredAt
		}
	}
	if c.ended && c.joined && c.own {
		if se := h.sessions[c.parent]; se != nil {
			h.publish(c.parent, se, se.m.ChildDone(c.subID, c.outcome, c.endAt))
		}
	}
}

// joinPending joins the waiting subagent transcripts of a started parent.
// Live (not at a scan, which has read every sidecar there is), a child
// without its sidecar yet waits for it up to metaGrace.
func (h *handler) joinPending(parent string, live bool) {
	se := h.sessions[parent]
	list := h.pending[parent]
	delete(h.pending, parent)
	for _, c := range list {
		if c.joined {
			continue
		}
		if live && c.kind == childFile && c.meta.ToolUseID == "" && !c.metaWaited {
			h.pending[parent] = append(h.pending[parent], c)
			if !c.metaWait {
				c.metaWait = true
				time.AfterFunc(metaGrace, func() {
					h.ss.Post(func() {
						c.metaWaited = true
						if se := h.sessions[parent]; se != nil && se.m.Started() && !c.joined {
							h.joinPending(parent, true)
						}
					})
				})
			}
			continue
		}
		c.joined = true
		evs, subID, own := se.m.Child(c.agentID, c.meta.ToolUseID, c.meta.AgentType, c.meta.Description, 0)
		c.subID, c.own = subID, own
		h.publish(parent, se, evs)
		if own && c.ended {
			h.publish(parent, se, se.m.ChildDone(subID, c.outcome, c.endAt))
		}
	}
}

// metaFile applies a subagent transcript's .meta.json sidecar (nil: gone).
// A malformed one counts as empty. It may come before or after the
// transcript's first line; once the child is joined it changes nothing.
func (h *handler) metaFile(transcript string, data []byte) {
	if data == nil {
		delete(h.metas, transcript)
		return
	}
	var m childMeta
	_ = json.Unmarshal(data, &m)
	h.metas[transcript] = m
	if c := h.children[transcript]; c != nil && c.kind == childFile && !c.joined {
		c.meta = m
		if m.ToolUseID != "" {
			c.track, c.ended = nil, false // the parent's tool tells when it ends
		}
	}
}
