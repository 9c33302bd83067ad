package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// Defaults of Options.
const (
	DefaultRingSize    = 4096    // records kept for resuming clients
	DefaultRingBytes   = 8 << 20 // encoded bytes kept for resuming clients
	DefaultQueueSize   = 1024    // records queued per stream client before it is cut off
	DefaultDiagnostics = 200     // recent diagnostics kept for GET /v1/diagnostics
	// DefaultRevisionBlock is how many revisions the hub reserves in its
	// RevisionStore at a time: one write per million records.
	DefaultRevisionBlock = 1_000_000
)

// MaxStartRevision (2^52) is the highest revision a hub starts at from the
// clock or after a mark it does not believe (see New, MaxMark); a clock
// past it is capped. Revisions then stay below 2^53, the largest integer a
// JavaScript number holds exactly, for 2^52 more records.
const MaxStartRevision uint64 = 1 << 52

// MaxMark (3·2^51) bounds the saved marks a hub believes: a run started at
// MaxStartRevision (after a mark that could not be believed) saves marks
// above it, which the next run continues from; a mark at or above MaxMark
// is no earlier run's and is treated like one that cannot be read.
const MaxMark uint64 = 3 << 51

// RevisionStore keeps the hub's revision high-water mark across runs. The
// hub saves a mark before it hands out any revision up to it, one block at
// a time (Options.RevisionBlock), never once per record.
type RevisionStore interface {
	// Load returns the mark an earlier run saved; 0 when there is none.
	Load() (uint64, error)
	// Save records that revisions up to mark may have been handed out.
	Save(mark uint64) error
}

// Options configure a Hub. The zero value is usable.
type Options struct {
	Logger    *slog.Logger          // nil: slog.Default()
	RingSize  int                   // records kept for resume; 0: DefaultRingSize
	RingBytes int                   // bytes kept for resume; 0: DefaultRingBytes
	QueueSize int                   // live queue per subscriber (until it attaches its own); 0: DefaultQueueSize
	Now       func() time.Time      // nil: time.Now
	Registry  prometheus.Registerer // nil: no metrics registered
	ProcRoot  string                // for the ancestorPid filter; "": "/proc"
	// Revisions keeps the revision high-water mark across runs; nil keeps
	// none, and revisions then rest on the wall clock alone.
	Revisions RevisionStore
	// RevisionBlock is how many revisions are reserved in Revisions at a
	// time; 0: DefaultRevisionBlock.
	RevisionBlock uint64
	// Tested gives, by harness id, the versions of its agent CLI the live
	// suite tested (GET /v1/sources shows them beside the versions seen).
	Tested map[string]agentbridge.VersionRange
	// Recorder is handed the facts of every commit (the bridge's
	// history): every event folded into a session (journal, push source,
	// hook) and every session given whole or upserted by a remote, in
	// order, once the commit is certain (see Recorder, Fact and Sink). Its
	// Record runs under the hub's lock, on the goroutine that commits: it
	// must only take the facts (copy them, queue them) and never block,
	// call the hub or do I/O, or every source and client waits on it. nil:
	// none, and no fact is made.
	Recorder Recorder
}

// Hub is the ordered, validating state of every source: the sessions they
// report, the harness switches, the recent diagnostics and the ring of
// recent stream records. All methods are safe for concurrent use; none
// blocks on a stream client.
//
// Revisions: one counter for the whole hub. It starts at the wall-clock
// start time in microseconds (so it grows across restarts and stays below
// 2^53), or just above the high-water mark an earlier run saved in
// Options.Revisions when that is higher (an earlier run that published more
// records than microseconds passed, or a clock set back), and grows by one
// per record. Every revision of this run is above every revision of an
// earlier run that saved its mark. Subscribe may also reserve revisions
// for the initial resets it hands out (see Subscribe), so consecutive
// records can differ by more than one; revisions are never reused.
type Hub struct {
	log      *slog.Logger
	now      func() time.Time
	queue    int
	procRoot string
	met      *metrics

	mu        sync.Mutex
	start     uint64 // the revision before the first record of this run
	rev       uint64
	floor     uint64 // cursors at or below it cannot be replayed (evicted or from a partial initial batch)
	partial   []revRange
	ring      *ring
	store     RevisionStore // nil: none
	block     uint64
	mark      uint64             // revisions up to it are reserved in store
	sources   map[string]*source // by sourceKey
	order     []string           // local source ids in the order added
	remote    []*source          // (host, source) pairs of remotes, in the order first seen
	remotes   map[string]*Remote // by remote id
	diags     []agentbridge.DiagnosticEntry
	subs      map[*Subscription]struct{}
	running   bool
	evictions int
	tested    map[string]agentbridge.VersionRange // Options.Tested, read only
	rec       Recorder                            // Options.Recorder, read only; nil: no facts are made
}

// revRange is a closed range of revisions.
type revRange struct{ lo, hi uint64 }

// source is the hub's view of one source.
type source struct {
	info     agentbridge.SourceInfo
	host     string           // the remote that reports it; "" for this bridge's own
	all      map[string]*sess // a remote source: every session, shown or hidden by a harness switch
	run      Source           // nil for a push source
	enabled  validate.Harnesses
	sessions map[string]*sess
	changes  chan []string // capacity 1: only the latest enabled set is kept
	ctx      context.Context
	ver      uint64 // bumped on every commit that touches the source
	cache    *initCache
	pub      *publisher // a local source's store: a running source's Sink, a push source's too (nil: a remote's)
	hooked   time.Time  // when the latest hook was taken
	// the latest refused hook payload's code and time (hooks.go)
	refusedCode string
	refusedAt   time.Time

	// seen: harness → agent versions its journals named, in the order first seen
	seen map[string][]string
}

// sess is one session as clients see it: the (redacted, valid) snapshot
// and what is beside it. (Its fold is in the source's store.)
type sess struct {
	snap  agentbridge.Snapshot
	act   *agentbridge.Activity // nil: none; never changed once stored
	ended *agentbridge.Ended    // nil: not ended; never changed once stored
	// stopped: a remote's session whose session.stopped a recorder was
	// told (remote.go; under the hub's lock)
	stopped bool
}

// New returns an empty hub.
func New(o Options) *Hub {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RingSize <= 0 {
		o.RingSize = DefaultRingSize
	}
	if o.RingBytes <= 0 {
		o.RingBytes = DefaultRingBytes
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.RevisionBlock == 0 {
		o.RevisionBlock = DefaultRevisionBlock
	}
	start := min(uint64(max(0, o.Now().UnixMicro())), MaxStartRevision)
	if o.Revisions != nil {
		last, err := o.Revisions.Load()
		if err != nil {
			// The error may name the file: keep it out of the default level.
			o.Logger.Debug("read revision mark", "err", err)
		}
		switch {
		case err != nil || last >= MaxMark:
			// Not a mark an earlier run saved (garbled, tampered with, a
			// number past 2^64, a file that cannot be read): one rule for
			// all of them. Start at the ceiling: above every revision an
			// honest run that began below it handed out, yet far short of
			// 2^53; the next run continues above this one's mark.
			o.Logger.Warn("the revision mark of the last run cannot be believed; revisions continue from the ceiling below 2^53")
			start = max(start, MaxStartRevision)
		case last >= start:
			start = last + 1
		}
	}
	h := &Hub{
		log:      o.Logger,
		now:      o.Now,
		queue:    o.QueueSize,
		procRoot: o.ProcRoot,
		start:    start,
		rev:      start,
		floor:    start,
		ring:     newRing(o.RingSize, o.RingBytes),
		store:    o.Revisions,
		block:    o.RevisionBlock,
		mark:     start,
		sources:  map[string]*source{},
		subs:     map[*Subscription]struct{}{},
		tested:   maps.Clone(o.Tested),
		rec:      o.Recorder,
	}
	h.met = newMetrics(h, o.Registry)
	h.reserve()
	return h
}

// reserve saves a new high-water mark, a block above the current revision,
// once the current revision has reached the saved one. Callers raise h.rev
// and call it before any record with the new revisions is visible; h.mu
// must be held (or the hub not yet shared). A failed save is logged and
// retried a block later.
func (h *Hub) reserve() {
	if h.store == nil || h.rev < h.mark {
		return
	}
	h.mark = h.rev + h.block
	if err := h.store.Save(h.mark); err != nil {
		h.log.Warn("cannot save the revision mark; after a restart revisions rest on the clock alone")
		h.log.Debug("save revision mark", "err", err)
	}
}

// Add registers a source that reports by running. Every declared harness
// starts switched on. It must be called before Run; ids are unique.
//
// A Source that also implements prometheus.Collector has its instruments
// exposed with the hub's (Options.Registry).
func (h *Hub) Add(src Source) error {
	if err := h.add(src.Info(), src); err != nil {
		return err
	}
	h.met.source(h, src)
	return nil
}

// AddPush registers a push source declared in the configuration: it has no
// Run and reports through Publish (POST /v1/sources/{id}/publish). Every
// declared harness starts switched on.
func (h *Hub) AddPush(info agentbridge.SourceInfo) error {
	info.Push = true
	return h.add(info, nil)
}

func (h *Hub) add(info agentbridge.SourceInfo, run Source) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running {
		return fmt.Errorf("hub: add source %q: the hub is already running", info.ID)
	}
	if _, ok := h.sources[info.ID]; ok {
		return fmt.Errorf("hub: add source %q: duplicate id", info.ID)
	}
	if info.ID == "" {
		return errors.New("hub: add source: empty id")
	}
	s := &source{
		info:     info,
		run:      run,
		enabled:  validate.Harnesses{},
		sessions: map[string]*sess{},
		changes:  make(chan []string, 1),
		ctx:      context.Background(),
	}
	for _, hr := range info.Harnesses {
		s.enabled[hr.ID] = true
	}
	s.pub = newPublisher(h, s)
	h.sources[info.ID] = s
	h.order = append(h.order, info.ID)
	return nil
}

// Run runs every added Source in its own goroutine until ctx ends, then
// waits for all of them and returns nil. A source that returns an error is
// logged, recorded as a diagnostic (code source-failed) and its sessions are
// dropped with an empty reset, since nothing keeps them current any more;
// the others carry on. Run may be called once.
func (h *Hub) Run(ctx context.Context) error {
	h.mu.Lock()
	if h.running {
		h.mu.Unlock()
		return errors.New("hub: already running")
	}
	h.running = true
	var runs []*source
	for _, id := range h.order {
		s := h.sources[id]
		s.ctx = ctx
		if s.run != nil {
			runs = append(runs, s)
		}
	}
	starts := make([]Start, len(runs))
	for i, s := range runs {
		starts[i] = Start{Enabled: s.enabledList(), Changes: s.changes, Publisher: s.pub}
	}
	h.mu.Unlock()

	var wg sync.WaitGroup
	for i, s := range runs {
		wg.Go(func() {
			err := s.run.Run(ctx, starts[i])
			if err == nil || ctx.Err() != nil { // shutting down: not a failure
				return
			}
			// The error text may name files; keep it out of the default level.
			h.log.Warn("source stopped with an error", "source", s.info.ID)
			h.log.Debug("source error", "source", s.info.ID, "err", err)
			h.failed(s)
		})
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// failed records that s stopped: a diagnostic and an empty reset.
func (h *Hub) failed(s *source) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.begin(s)
	t.add(&entry{rec: Record{Name: agentbridge.RecordDiagnostic}, source: s.info.ID},
		diagData{Source: s.info.ID, Diagnostic: agentbridge.Diagnostic{Code: "source-failed", Message: "the source stopped with an error; see the bridge log"}})
	t.replaceAll(nil)
	h.commit(t)
}

func (s *source) enabledList() []string {
	out := []string{}
	for _, hr := range s.info.Harnesses {
		if s.enabled[hr.ID] {
			out = append(out, hr.ID)
		}
	}
	return out
}

func (s *source) state(now time.Time, tested map[string]agentbridge.VersionRange) agentbridge.SourceState {
	st := agentbridge.SourceState{SourceInfo: s.info, Harnesses: make([]agentbridge.HarnessState, 0, len(s.info.Harnesses))}
	st.Observes = s.observes(now)
	st.SourceInfo.Harnesses = slices.Clone(s.info.Harnesses)
	for _, hr := range s.info.Harnesses {
		hs := agentbridge.HarnessState{Harness: hr, Enabled: s.enabled[hr.ID], VersionsSeen: slices.Clone(s.seen[hr.ID])}
		slices.Sort(hs.VersionsSeen)
		if r, ok := tested[hr.ID]; ok {
			hs.Tested = &r
		}
		st.Harnesses = append(st.Harnesses, hs)
	}
	return st
}

// sawVersion notes that source s found version in a journal of harness.
func (h *Hub) sawVersion(s *source, harness, version string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := s.enabled[harness]; !ok || slices.Contains(s.seen[harness], version) {
		return
	}
	if s.seen == nil {
		s.seen = map[string][]string{}
	}
	vs := append(s.seen[harness], version)
	if len(vs) > MaxVersionsSeen {
		vs = slices.Delete(vs, 0, len(vs)-MaxVersionsSeen)
	}
	s.seen[harness] = vs
}

// Sources returns every source with its harness switches, in the order
// they were added.
func (h *Hub) Sources() []agentbridge.SourceState {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]agentbridge.SourceState, 0, len(h.order))
	for _, id := range h.order {
		out = append(out, h.sources[id].state(h.now(), h.tested))
	}
	return out
}

// Source returns one source with its harness switches.
func (h *Hub) Source(id string) (agentbridge.SourceState, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sources[id]
	if !ok || s.host != "" {
		return agentbridge.SourceState{}, false
	}
	return s.state(h.now(), h.tested), true
}

// SetHarness switches one harness of a source on or off and returns the
// source's new state; it fails with ErrUnknownSource or ErrUnknownHarness.
// When the switch changes, the hub at once drops the harness's sessions
// (remove records), emits a harnesses record and hands the new enabled set
// to the source through Start.Changes (never blocking: an unread older set
// is replaced), so that the source re-sends a reset. For a push source the
// hub emits that reset itself, with the sessions that remain.
func (h *Hub) SetHarness(sourceID, harness string, enabled bool) (agentbridge.SourceState, error) {
	h.mu.Lock()
	s, ok := h.sources[sourceID]
	h.mu.Unlock()
	if !ok || s.host != "" {
		return agentbridge.SourceState{}, ErrUnknownSource
	}
	if s.run == nil {
		// A push source's store changes too: it is locked first, then the
		// hub, the order of every intake.
		s.pub.mu.Lock()
		defer s.pub.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := s.enabled[harness]; !ok {
		return agentbridge.SourceState{}, ErrUnknownHarness
	}
	if s.enabled[harness] == enabled {
		return s.state(h.now(), h.tested), nil
	}
	s.enabled[harness] = enabled

	t := h.begin(s)
	if s.run != nil && !enabled {
		var drop []string
		for id, ss := range s.sessions {
			if ss.snap.Harness == harness {
				drop = append(drop, id)
			}
		}
		slices.Sort(drop)
		for _, id := range drop {
			t.remove(id)
		}
	}
	list := s.enabledList()
	t.add(&entry{rec: Record{Name: agentbridge.RecordHarnesses}, source: s.info.ID},
		harnessesData{Source: s.info.ID, EnabledHarnesses: list})
	if s.run == nil {
		// A push source has no tailer to report again: the switched-off
		// sessions leave its store, and what is left is its whole state.
		if !enabled {
			s.pub.drop(harness)
		}
		s.pub.replaceInView(t)
	}
	h.commit(t)
	h.switchRemotes(s)

	if s.run != nil && h.running {
		select {
		case <-s.changes: // replace an unread older set
		default:
		}
		s.changes <- list // capacity 1 and only senders hold h.mu: never blocks
	}
	return s.state(h.now(), h.tested), nil
}

// sourceKey is the key of h.sources: the source id, after "host/" for a
// remote's source.
func sourceKey(host, id string) string {
	if host == "" {
		return id
	}
	return host + "/" + id
}

// streamed returns every source whose sessions clients see: the local ones
// in the order added, then the remotes' sources in the order first seen.
// h.mu must be held.
func (h *Hub) streamed() []*source {
	out := make([]*source, 0, len(h.order)+len(h.remote))
	for _, id := range h.order {
		out = append(out, h.sources[id])
	}
	return append(out, h.remote...)
}

// Sessions returns the revision and every session that f selects, sorted by
// host (this bridge's own first), source, then session id. Applying the
// stream from that revision on (Subscribe with since = rev) keeps the list
// exact.
func (h *Hub) Sessions(f agentbridge.Filter) (uint64, []agentbridge.Entry) {
	h.mu.Lock()
	rev := h.rev
	all := make([]agentbridge.Entry, 0, 64)
	for _, s := range h.streamed() {
		if !selects(f, s) {
			continue
		}
		for _, ss := range s.sessions {
			all = append(all, agentbridge.Entry{Source: s.info.ID, Host: s.host, Snapshot: ss.snap, Activity: ss.act, Ended: ss.ended})
		}
	}
	h.mu.Unlock()

	m := newMatcher(f, h.procRoot)
	out := all[:0]
	for _, e := range all {
		if m.match(e.Host, e.Source, &e.Snapshot) {
			e.Snapshot = e.Snapshot.Clone()
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b agentbridge.Entry) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Source, b.Source), cmp.Compare(a.Snapshot.ID, b.Snapshot.ID))
	})
	return rev, out
}

// Session returns one session of this bridge's own.
func (h *Hub) Session(sourceID, id string) (agentbridge.Entry, bool) {
	return h.SessionOn("", sourceID, id)
}

// SessionOn returns one session of host: a remote's id, or "" for this
// bridge's own.
func (h *Hub) SessionOn(host, sourceID, id string) (agentbridge.Entry, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sources[sourceKey(host, sourceID)]
	if !ok {
		return agentbridge.Entry{}, false
	}
	ss, ok := s.sessions[id]
	if !ok {
		return agentbridge.Entry{}, false
	}
	return agentbridge.Entry{Source: sourceID, Host: host, Snapshot: ss.snap.Clone(), Activity: ss.act, Ended: ss.ended}, true
}

// Diagnostics returns the most recent diagnostics (at most
// DefaultDiagnostics), oldest first.
func (h *Hub) Diagnostics() []agentbridge.DiagnosticEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.diags)
}

// Revision returns the current revision: the state Sessions shows now.
func (h *Hub) Revision() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rev
}

// Diagnose records a problem the bridge itself met while serving a
// source's sessions (a webhook that could not be reached): it is shown in
// GET /v1/diagnostics and on the stream like the source's own. It fails
// with ErrUnknownSource, or an *InvalidError for a diagnostic that breaks
// the rules (a code that is not kebab-case, an empty message).
func (h *Hub) Diagnose(sourceID string, d agentbridge.Diagnostic) error {
	validate.RedactDiagnostic(&d)
	if issues := validate.Diagnostic(d); len(issues) > 0 {
		return &InvalidError{Issues: issues}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sources[sourceID]
	if !ok {
		return ErrUnknownSource
	}
	t := h.begin(s)
	t.add(&entry{rec: Record{Name: agentbridge.RecordDiagnostic}, source: sourceID}, diagData{Source: sourceID, Diagnostic: d})
	h.commit(t)
	return nil
}
