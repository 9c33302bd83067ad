package sources

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/validate"
)

// DefaultLinger is how long an exited session stays before it stops.
const DefaultLinger = 10 * time.Minute

// reuseSlack is how much later than a session's start its bound process may
// have started before the pid is taken as reused by another process.
const reuseSlack = 5 * time.Second

// Sessions keeps what binds the sessions of one source to their
// processes, and hands their events to the hub (a hub.Sink), which holds
// and folds the sessions themselves; nothing here folds or keeps a
// snapshot:
//
//   - between Rescan and ScanDone (a scan) the hub builds the sessions
//     aside; ScanDone commits them as one reset;
//   - afterwards each event is folded by the hub as it comes, and what one
//     wake of the source read is committed at Idle: the lifecycle records
//     in order, then one upsert per changed session;
//   - a session of a switched-off harness is kept by the hub but not shown;
//     a harness switch sends a fresh reset (Follow does this);
//   - a session bound to a process (BindPID, BindHolder, or session.started
//     with a pid) gets agent.exited when the process ends, observed with a
//     pidfd; an exited session lingers for Linger, then stops, unless a
//     new process takes it up first (BindPID, or session.started);
//   - with ExpireAfter (Follow sets it to the window), a session bound to
//     no process leaves the hub after that long without an event, and
//     comes back whole with its next event.
//
// Events that the fold rejects are dropped and counted; lines a source
// could not use are counted with BadLine; the counts become one diagnostic
// per code at Idle, without paths or content. The hub redacts text before
// it folds it.
//
// Sessions implements Rescan, ScanDone, Idle and Diagnostic of Handler, so
// a source's handler embeds *Sessions and adds Line, Truncated and Removed.
// All methods must be called on the source's goroutine (the Tailer's Run
// goroutine under Follow); it is not safe for concurrent use.
type Sessions struct {
	pub     hub.Sink
	enabled map[string]bool
	linger  time.Duration
	log     *slog.Logger
	post    func(func())
	ctx     context.Context
	now     func() time.Time

	m       map[string]*entry
	live    bool                     // a reset was sent; publish events as they come
	bad     map[string]int           // skipped lines/events by diagnostic code
	why     map[string]bool          // issue codes behind CodeInvalidEvent
	held    map[proc.FileKey][]int   // open files of other processes, cached for one scan
	heldErr bool                     // the /proc scan failed this scan
	timers  map[*time.Timer]struct{} // linger and expiry timers, stopped at Rescan
	expire  time.Duration            // hide unbound sessions idle this long; 0: never
	holders map[string]string        // id → journal: BindHolder requests for Idle
	agent   proc.Agent               // whose writers bind (FollowConfig.Agent)
	procs   Processes                // the machine's processes (FollowConfig.Processes)
	finds   map[string]ProcQuery     // id → FindProcess requests for ScanDone or Idle

	// the format-drift canary and the versions passed on (drift.go)
	drift    drift
	versions map[string]bool // "harness version" passed on (Version)
}

// entry is one session and what binds it to a process.
type entry struct {
	harness  string
	since    time.Time // when the session started, as its records tell (zero: unknown)
	pid      int
	unwatch  context.CancelFunc
	exitedAt time.Time
	timer    *time.Timer // linger
	last     time.Time   // the last event
	expiry   *time.Timer // checks for inactivity (ExpireAfter)
	hidden   bool        // expired: removed from the hub, kept here
}

// NewSessions returns an empty Sessions publishing to pub, with the
// harnesses in enabled switched on. post runs a function on the source's
// goroutine (Tailer.Post); ctx bounds the process watches and timers.
// linger is how long an exited session stays: 0 means DefaultLinger,
// negative keeps it until its journal goes away. Follow calls this for you.
func NewSessions(ctx context.Context, pub hub.Sink, enabled []string, linger time.Duration, post func(func()), log *slog.Logger) *Sessions {
	if linger == 0 {
		linger = DefaultLinger
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ss := &Sessions{
		pub: pub, linger: linger, log: log, post: post, ctx: ctx, now: time.Now, procs: Machine,
		m: map[string]*entry{}, bad: map[string]int{},
		why: map[string]bool{}, timers: map[*time.Timer]struct{}{},
	}
	ss.setEnabled(enabled)
	return ss
}

// Post runs f later on the source's goroutine (Tailer.Post): the way for
// another goroutine's result to reach Sessions and the Handler.
func (ss *Sessions) Post(f func()) { ss.post(f) }

// Enabled reports whether harness is switched on.
func (ss *Sessions) Enabled(harness string) bool { return ss.enabled[harness] }

// Live reports whether the scan is over and events are published as they
// come (false between Rescan and ScanDone).
func (ss *Sessions) Live() bool { return ss.live }

// Get returns the session's state as the hub folded it, or nil when it is
// unknown. It is read only (use Event) and valid until the next call. It
// may be read whole on the source's goroutine while the agent's hooks
// come in: the hub folds a hook into a copy, never into a fold it handed
// out (hub.Sink.Session), so a Get kept past a call is stale, never torn.
func (ss *Sessions) Get(id string) *fold.Session {
	if ss.m[id] == nil {
		return nil
	}
	return ss.pub.Session(id)
}

// View returns the read-only view of session id's fold that a mapper
// reads before it maps the session's next line (fold.View), the empty
// view when the session is unknown. Valid until the next event; safe to
// read while hooks come in, as Get is. It costs no copy (per line).
func (ss *Sessions) View(id string) fold.View { return fold.ViewOf(ss.Get(id)) }

// Exited reports whether session id is known and exited: agent.exited was
// folded (its process ended) and no new process took it up since. It is
// cheap (no snapshot copy), for use per line.
func (ss *Sessions) Exited(id string) bool {
	en := ss.m[id]
	return en != nil && !en.exitedAt.IsZero()
}

// IDs returns the ids of the known sessions, sorted.
func (ss *Sessions) IDs() []string {
	ids := make([]string, 0, len(ss.m))
	for id := range ss.m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Event folds e into session id of harness (creating the session, status
// idle, when it is new) and publishes it when the scan is over and the
// harness is on. It reports whether the fold accepted it; a rejected event
// changes nothing and is counted under CodeInvalidEvent; a session id that
// is not an identity value (validate.ValidID) is counted under CodeInvalidRecord.
//
// session.started with a pid binds the session to that process (BindPID);
// session.started's OccurredAt guards against pid reuse. agent.exited
// starts the linger; session.stopped forgets the session.
func (ss *Sessions) Event(id, harness string, e agentbridge.Event) bool {
	en := ss.m[id]
	isNew := en == nil
	if isNew && !validate.ValidID(id) {
		ss.bad[CodeInvalidRecord]++ // one bad id must not spoil the reset
		return false
	}
	if err := ss.pub.Fold(id, harness, e); err != nil {
		// A rejected event changes nothing and makes no session.
		ss.bad[CodeInvalidEvent]++
		var ie *hub.InvalidError
		if errors.As(err, &ie) {
			for _, is := range ie.Issues {
				ss.why[string(is.Code)] = true
			}
		}
		ss.log.Debug("event rejected by the fold", "session", id, "kind", e.Kind, "err", err)
		return false
	}
	if isNew {
		en = &entry{harness: harness}
		ss.m[id] = en
	}
	en.hidden = false // the hub shows a hidden session again, whole
	if e.Kind == agentbridge.KindSessionStarted && !en.exitedAt.IsZero() {
		ss.revive(en) // a new process took the session up (e.g. a resume)
	}
	ss.touch(id, en)
	switch e.Kind {
	case agentbridge.KindSessionStarted:
		if e.OccurredAt > 0 {
			en.since = time.UnixMilli(e.OccurredAt)
		}
		if e.PID > 0 {
			ss.BindPID(id, e.PID)
		}
	case agentbridge.KindAgentExited:
		ss.unwatch(en)
		at := ss.now()
		if e.OccurredAt > 0 {
			at = time.UnixMilli(e.OccurredAt)
		}
		ss.startLinger(id, en, at)
	case agentbridge.KindTurnStarted:
		ss.drift.turn(id)
	case agentbridge.KindSessionStopped:
		ss.drop(id, en)
		ss.drift.forget(id)
	}
	return true
}

func (ss *Sessions) removeFromHub(id string) {
	if err := ss.pub.Remove(id); err != nil {
		ss.log.Debug("hub refused a remove", "session", id, "err", err)
	}
}

// Restart drops what the session's journal said so far, because the
// journal is read again from the start (Handler.Truncated). The session
// keeps its id, harness and process binding: a live bound process is
// folded into the rebuilt session first (a journal rewritten under a
// running agent, e.g. by an undo, need not name its pid again). The events
// that follow rebuild it aside in the hub and it is upserted whole at Idle.
func (ss *Sessions) Restart(id string) {
	en := ss.m[id]
	if en == nil {
		return
	}
	if en.timer != nil {
		en.timer.Stop()
		delete(ss.timers, en.timer)
		en.timer = nil
	}
	en.exitedAt = time.Time{}
	ss.drift.reread(id)
	ss.pub.Restart(id)
	if en.pid > 0 && en.unwatch != nil {
		if err := ss.pub.Fold(id, en.harness, agentbridge.Event{Kind: agentbridge.KindSessionStarted, PID: en.pid}); err != nil {
			ss.log.Debug("process not kept across a restart", "session", id, "err", err)
		}
	}
}

// Stop ends the observation of a session (its journal went away): it
// publishes session.stopped with reason, which makes the hub remove it, and
// forgets it. Unknown ids are ignored.
func (ss *Sessions) Stop(id, reason string) {
	en := ss.m[id]
	if en == nil {
		return
	}
	if !ss.Event(id, en.harness, agentbridge.Event{Kind: agentbridge.KindSessionStopped, Reason: reason}) {
		ss.drop(id, en) // the fold refused it: still forget the session
		ss.removeFromHub(id)
	}
}

// drop forgets a session and its process watch and timer.
func (ss *Sessions) drop(id string, en *entry) {
	ss.unwatch(en)
	if en.timer != nil {
		en.timer.Stop()
		delete(ss.timers, en.timer)
	}
	ss.stopExpiry(en)
	delete(ss.m, id)
}

// BadLine counts a journal line the source skipped (CodeInvalidJSON,
// CodeInvalidRecord, or a code of its own); Idle reports the count.
func (ss *Sessions) BadLine(code string) { ss.bad[code]++ }

// Rescan implements Handler: it forgets every session, process watch and
// timer; the hub builds the sessions aside until ScanDone.
func (ss *Sessions) Rescan() {
	for id, en := range ss.m {
		ss.drop(id, en)
	}
	for tm := range ss.timers {
		tm.Stop()
	}
	clear(ss.timers)
	clear(ss.holders)
	clear(ss.finds)
	ss.live = false
	ss.held, ss.heldErr = nil, false
	ss.drift.reread("")
	ss.pub.Rescan()
}

// ScanDone implements Handler: the hub commits the scan as one reset of
// every session of an enabled harness; events are published as they come
// from now on.
func (ss *Sessions) ScanDone() {
	if len(ss.finds) > 0 {
		ss.findProcesses()
	}
	ss.held, ss.heldErr = nil, false
	ss.live = true
	ss.reportDrift() // before the reset: a client that has the reset has the drift too
	ss.pub.Flush()
}

// reportDrift publishes the drift canary's diagnostics (Record).
func (ss *Sessions) reportDrift() {
	for _, d := range ss.drift.report() {
		ss.Diagnostic(d)
	}
}

// Reset sends a reset of every session of an enabled harness that is in
// view, as the hub holds them. Follow calls it after a harness switch that
// keeps the same roots.
func (ss *Sessions) Reset() {
	ss.pub.Show(slices.Sorted(maps.Keys(ss.enabled)))
}

// Idle implements Handler: the hub commits what this wake folded (the
// lifecycle records, then one upsert per changed session), and the counts
// of skipped lines and rejected events become diagnostics.
func (ss *Sessions) Idle() {
	if len(ss.holders) > 0 {
		ss.bindPendingHolders()
	}
	if len(ss.finds) > 0 {
		ss.findProcesses()
	}
	ss.pub.Flush()
	ss.reportDrift()
	if len(ss.bad) == 0 {
		return
	}
	for _, c := range slices.Sorted(maps.Keys(ss.bad)) {
		ss.Diagnostic(agentbridge.Diagnostic{Code: c, Message: badMessage(c, ss.bad[c], ss.why)})
	}
	clear(ss.bad)
	clear(ss.why)
}

// badMessage is the diagnostic text for n skipped lines (or dropped
// events) of code, in plain English for any n.
func badMessage(code string, n int, why map[string]bool) string {
	switch code {
	case CodeInvalidJSON:
		return "skipped " + plural(n, "journal line that is not a JSON object", "journal lines that are not JSON objects")
	case CodeInvalidRecord:
		return "skipped " + plural(n, "journal line whose record has unusable fields", "journal lines whose records have unusable fields")
	case CodeInvalidEvent:
		codes := make([]string, 0, len(why))
		for c := range why {
			codes = append(codes, c)
		}
		sort.Strings(codes)
		return fmt.Sprintf("dropped %s that broke the host's rules (%s)", plural(n, "lifecycle event", "lifecycle events"), strings.Join(codes, ", "))
	case CodePublishRefused:
		return "the hub refused " + plural(n, "session update", "session updates")
	case CodeSideNotRegular, CodeSideTooLarge:
		return sideMessage(code, n)
	}
	return fmt.Sprintf("skipped %s (%s)", plural(n, "journal line", "journal lines"), code)
}

// plural is "1 one" or "n many".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Diagnostic implements Handler: it publishes d to the hub, which redacts it.
func (ss *Sessions) Diagnostic(d agentbridge.Diagnostic) {
	if err := ss.pub.Diagnostic(d); err != nil {
		ss.log.Error("hub refused a diagnostic", "code", d.Code, "err", err)
	}
}

func (ss *Sessions) setEnabled(set []string) {
	ss.enabled = make(map[string]bool, len(set))
	for _, h := range set {
		ss.enabled[h] = true
	}
}
