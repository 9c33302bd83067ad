// Package sources holds what every file-based session source shares: the
// Tailer, which follows the journal files under one or more directory trees
// with fsnotify, and Sessions, which hands a source's events to the hub (a
// hub.Sink: the hub alone keeps and folds the sessions) and binds sessions
// to processes. The
// sources themselves live in sub-packages (example, claudecode, codex) and
// only map their journal records to lifecycle events.
//
// # The shape of a source
//
// A source is one Agent, registered from init with
// RegisterAgent: its Single (ids, homes, environment, observes, hooks), the
// files it follows (Tail), its agent's processes (Process) and its
// Handler's maker. Most agents' handler is declarative, a *Journals
// (which session a file is, per-session state, a line mapper, a side
// file). A source whose handler does more writes it (see package example,
// the model to copy), a small type that embeds *Sessions (which supplies
// Rescan, ScanDone, Idle and Diagnostic) and adds Line, Truncated and
// Removed, and names it with HandlerFunc:
//
//	type handler struct {
//		*sources.Sessions
//		rec record // decode scratch, reused per line
//	}
//
//	func (h *handler) Line(path string, line []byte) {
//		// decode only the fields needed (line is only valid during the
//		// call); h.Event(id, harness, ev) per event; h.BadLine(code)
//		// for a line that is not JSON (CodeInvalidJSON) or lacks an id
//		// (CodeInvalidRecord); h.BindPID / h.BindHolder once per session
//	}
//	func (h *handler) Truncated(path string) { h.Restart(idOf(path)) }
//	func (h *handler) Removed(path string)   { h.Stop(idOf(path), "journal removed") }
//
//	var agent = &sources.Agent{
//		Single: sources.Single{ID: ID, DisplayName: DisplayName, Harness: Harness, HomeEnv: EnvHome},
//		Tail: func(o sources.Options) sources.TailConfig {
//			return sources.TailConfig{Roots: []string{SessionsDir(o.Home)}, Match: isJournal}
//		},
//		Handler: sources.HandlerFunc(func(_ sources.Options, ss *sources.Sessions) sources.Handler { return &handler{Sessions: ss} }),
//	}
//
//	func init() { sources.RegisterAgent(agent) }
//
// A source with several harnesses lists them (Single.Harnesses) and says
// which roots each switched-on set follows (Agent.RootsFor; gemini). A
// source that keeps more beside its tailer than a handler can own writes
// its own Run, which calls Follow itself (Agent.Run: codex's close watch,
// opencode's database watch); its own instruments are Agent.Metrics. A
// source whose Info depends on its home says so with Agent.InfoFor
// (claudecode: whether the live registry exists), and a handler that
// chooses which old files a scan reads implements RecentFiles.
//
// Optional capabilities are found by interface on the Handler: one that
// also implements WholeFiles gets small side files (an agent's process
// registry, a subagent's metadata, sidecars) read whole through ReadSmall
// at each scan and change, instead of followed line by line (see
// claudecode, whose registry root is listed before its transcripts).
//
// Process binding knows the agent: FollowConfig.Agent (a proc.Agent)
// declares the agent's executable, and BindHolder, Holder and HeldOpen
// count a process only when it holds the journal open for writing
// (/proc/<pid>/fdinfo) and Agent matches it. Readers — tail -f, less, cp,
// an editor — are never bound, so their exit never marks a session
// exited. The rule of each source: codex.Agent (a codex process, or Node
// running Codex), claudecode.Agent (claude; bound through its registry,
// never by holders), example (any writer: its executable is not known).
//
// An agent that neither names its pid on disk nor holds its journal open
// (Pi, Kiro CLI, Mistral Vibe, Gemini CLI, Antigravity CLI, opencode,
// Cursor, Copilot without its lock file) is bound by the binder:
// FindProcess asks for the agent's process in the session's cwd that was
// running at its last write (ProcQuery), and the requests of one wake
// are answered together at ScanDone or Idle from one pass over /proc that
// the sources share (see pick for the rules). A session whose process is
// gone ends at once, so the first scan of a restarted bridge shows the
// truth. Processes (FollowConfig.Processes) makes /proc and the pidfd
// watch injectable: the tests use fake /proc trees (proc/proctest).
//
// Follow runs everything on one goroutine: every Handler call, every
// Sessions method and every function given to Tailer.Post run there, one at
// a time, so a source needs no locks.
//
// # Never polling
//
// Nothing here wakes on a timer while the bridge is idle. Files are read
// when fsnotify reports a change, from the stored offset to EOF, and read
// again if more arrived meanwhile (bursts coalesce, the first event is not
// delayed). Process exits come from pidfds (package proc). The only timers
// are one-shot: an exited session lingers for Linger, then stops (unless a
// new process takes it up: BindPID), and a session bound to no process
// leaves the hub after the window without an event. ReadActivity counts
// wake-ups, reads and fired timers for the tests that prove an idle
// bridge does nothing (TestIdleBridgeDoesNothing).
//
// A missing root is waited for by watching its nearest existing ancestor,
// moving down as directories appear; a root that vanishes is waited for
// again. A harness switch under Follow: off releases the watches (when no
// harness of the roots is on) and sends a reset without the harness's
// sessions (the hub drops them); on rescans and sends a fresh reset.
//
// Text and JSON rules are shared, never copied: identity values
// (validate.ValidID, validate.SafeID for an id that is not one), display
// text (text.Display, validate.Title, Label, Model: redacted, bounded,
// paths cut by the one path grammar of text.ShortenPaths), working directories
// (validate.CleanCwd) and record times (Millis). Records are decoded with
// github.com/go-json-experiment/json (and its jsontext for scanning): one
// pass into the fields the mapper reads, several times faster than
// encoding/json on agent journals; its strict defaults apply, so a record
// with invalid UTF-8 or a member named twice is a bad line.
//
// The mapping rules of each source sit beside its code: the package doc
// of example (the record format) and of codex, and
// claudecode/README.md (the mapping table).
package sources
