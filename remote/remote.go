// Package remote follows other bridges (config remotes) and feeds their
// sessions into the local hub, where they carry the remote's id as their
// host.
//
// A remote is reached over HTTP (its GET /v1/events as JSON lines, through
// client.Follow) or through SSH (`ssh HOST agentbridge stream`, whose
// standard output is the same JSON lines). Either way the follower resumes
// after a drop with the remote's own last revision, so that the remote
// replays exactly what followed it (or starts again with resets when it no
// longer can): never a gap, never a duplicate. A remote that is down or
// refuses the token is one diagnostic per outage naming the remote (never
// its URL's credentials), retried with backoff; when it stays out of reach
// for longer than the linger its sessions leave, and they come back with
// its next connection.
//
// Only the remote's own sessions are taken (records that carry a host came
// to it from its own remotes): remotes are not transitive, and two bridges
// that follow each other never loop.
package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/defaults"
	"github.com/agentbridge/agentbridge/validate"
)

// Options configure a follower.
type Options struct {
	// Linger is how long a remote's sessions stay after it went out of
	// reach; 0: at once.
	Linger time.Duration
	// Backoff is the reconnect delay (zero: client.DefaultBackoff).
	Backoff client.Backoff
	// Logger gets the errors behind the diagnostics at debug level (they
	// may name addresses); nil: slog.Default().
	Logger *slog.Logger
	// SSH is the ssh program run for an ssh remote; "": "ssh" on PATH.
	SSH string
	// Queue is how many records wait between the reader and the hub; a
	// remote that sends faster than the hub takes them is held back by
	// its own connection, and cut off by its own bridge as a slow client
	// when it falls a whole queue behind (it then resumes). 0: 1024.
	Queue int
	// QueueBytes bounds the same queue in bytes (the records' JSON); a
	// record larger than all of it passes alone. 0: DefaultQueueBytes.
	QueueBytes int64
}

// Bounds of what one remote costs in memory.
const (
	// MaxRecord is the longest line (one record) taken from a remote: a
	// reset of some 8,000 typical sessions (about 1 KiB each) or 128 of the
	// largest the rules allow. A longer line (or bytes that never end a
	// line) drops the connection with CodeFailed and a backoff.
	MaxRecord = 8 << 20
	// DefaultQueueBytes bounds the records waiting for the hub.
	DefaultQueueBytes = 16 << 20
)

// Diagnostic codes of a remote (source hub.RemoteSource, host its id).
const (
	CodeUnreachable  = "remote-unreachable"
	CodeUnauthorized = "remote-unauthorized"
	CodeFailed       = "remote-failed"
	CodeBadRecords   = "remote-bad-records"
)

// maxBatch bounds the records applied to the hub in one commit.
const maxBatch = 1024

// Run follows the remote c into r until ctx ends, then returns nil.
func Run(ctx context.Context, r *hub.Remote, c config.Remote, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Backoff.Min <= 0 {
		o.Backoff = client.DefaultBackoff
	}
	defaults.Positive(&o.Queue, 1024)
	if o.SSH == "" {
		o.SSH = "ssh"
	}
	defaults.Positive(&o.QueueBytes, DefaultQueueBytes)
	f := &follower{r: r, c: c, o: o, log: o.Logger.With("remote", c.ID), msgs: make(chan msg, o.Queue), queued: newBudget(o.QueueBytes)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { f.apply(ctx) })
	f.connectLoop(ctx)
	cancel()
	wg.Wait()
	return nil
}

// follower is one remote being followed.
type follower struct {
	r      *hub.Remote
	c      config.Remote
	o      Options
	log    *slog.Logger
	msgs   chan msg
	queued *budget // the bytes of the records in msgs

	mu     sync.Mutex
	good   bool               // the current attempt delivered a record that decoded
	stop   context.CancelFunc // ends the current attempt (the linger passed: start afresh)
	fresh  bool               // the sessions left: the next attempt starts without a cursor
	last   uint64             // the remote's last revision delivered
	first  bool               // no event delivered yet on this connection
	logged int
}

// msg is what the reader hands the applier, in order.
type msg struct {
	rec  *hub.RemoteRecord // a record
	size int64             // its bytes, taken from queued
	up   bool              // the remote answers
	down error             // the remote is out of reach
}

// connectLoop runs attempts until ctx ends; each attempt follows until it
// fails, and the next waits the backoff.
func (f *follower) connectLoop(ctx context.Context) {
	delay := f.o.Backoff.Min
	for ctx.Err() == nil {
		actx, stop := context.WithCancel(ctx)
		f.mu.Lock()
		f.stop = stop
		if f.fresh {
			f.fresh, f.last = false, 0
		}
		since := f.last
		f.good = false
		f.mu.Unlock()
		var got bool
		err := f.attempt(actx, since, &got)
		stop()
		if ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		good := f.good
		f.mu.Unlock()
		if client.ResetsBackoff(good, err) {
			delay = f.o.Backoff.Min
		}
		if err == nil {
			err = errors.New("the remote ended the stream")
		}
		f.send(ctx, msg{down: err})
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(delay*2, f.o.Backoff.Max)
	}
}

func (f *follower) send(ctx context.Context, m msg) bool {
	select {
	case f.msgs <- m:
		return true
	case <-ctx.Done():
		return false
	}
}

// deliver takes one event of the remote's stream; got is set once it
// delivered any.
func (f *follower) deliver(ctx context.Context, ev client.Event) error {
	f.mu.Lock()
	if f.first && ev.ID < f.last {
		f.last = 0 // the remote's ids went back (see client.Follow): its resets are the state now
	}
	f.first = false
	if ev.ID <= f.last {
		f.mu.Unlock()
		return nil // delivered already: ids only grow
	}
	f.last = ev.ID
	f.mu.Unlock()
	rec, ok := decode(ev)
	if !ok {
		f.bad()
		return nil
	}
	f.mu.Lock()
	f.good = true
	f.mu.Unlock()
	if rec == nil {
		return nil // not a record of the remote's own sessions
	}
	size := f.queued.take(ctx, int64(len(ev.Data)))
	if size < 0 {
		return ctx.Err()
	}
	if !f.send(ctx, msg{rec: rec, size: size}) {
		f.queued.give(size) // never queued
		return ctx.Err()
	}
	return nil
}

// budget bounds the bytes of the records in a follower's queue: take
// waits for room (a record larger than all of it waits for an empty
// queue), give returns it.
type budget struct {
	mu    sync.Mutex
	used  int64
	max   int64
	freed chan struct{} // closed (and replaced) by give
}

func newBudget(max int64) *budget { return &budget{max: max, freed: make(chan struct{})} }

// take reserves n bytes (at most max) and returns what it reserved; -1
// when ctx ended first.
func (b *budget) take(ctx context.Context, n int64) int64 {
	n = min(max(n, 1), b.max)
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return n
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return -1
		}
	}
}

// give returns n bytes taken.
func (b *budget) give(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// bad counts a record that does not decode; the first of a run is a
// diagnostic.
func (f *follower) bad() {
	f.mu.Lock()
	f.logged++
	first := f.logged == 1
	f.mu.Unlock()
	if first {
		f.r.Diagnostic(CodeBadRecords, fmt.Sprintf("remote %s sent records that break the stream's rules; they are left out", f.c.ID))
	}
}

// attempt follows the remote once: over HTTP with client.Follow (which
// itself resumes across drops while the remote answers), or one run of ssh.
func (f *follower) attempt(ctx context.Context, since uint64, got *bool) error {
	if f.c.SSH != "" {
		return f.ssh(ctx, since, got)
	}
	u, err := url.Parse(f.c.URL)
	if err != nil {
		return err
	}
	token, err := config.RemoteToken(f.c)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	cl := client.New(u.Host, token)
	return cl.Follow(ctx, client.FollowOptions{
		StreamOptions: client.StreamOptions{Query: url.Values{"host": {agentbridge.LocalHost}}, Format: client.NDJSON, Since: since, MaxLine: MaxRecord},
		Backoff:       f.o.Backoff,
		OnConnect: func(bool) {
			f.mu.Lock()
			f.first = true
			f.mu.Unlock()
			*got = true
			f.send(ctx, msg{up: true})
		},
		OnDrop: func(err error) { f.send(ctx, msg{down: err}) },
	}, func(ev client.Event) error { return f.deliver(ctx, ev) })
}

// ssh runs `ssh HOST agentbridge stream --host local [--since N]` once
// and reads its standard output until it ends.
func (f *follower) ssh(ctx context.Context, since uint64, got *bool) error {
	args := []string{"-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=15", "--", f.c.SSH, "agentbridge", "stream", "--host", agentbridge.LocalHost}
	if since > 0 {
		args = append(args, "--since", strconv.FormatUint(since, 10))
	}
	cmd := exec.CommandContext(ctx, f.o.SSH, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &limited{w: &stderr, n: 4 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run ssh: %w", err)
	}
	f.mu.Lock()
	f.first = true
	f.mu.Unlock()
	rd := client.NewReader(bufio.NewReaderSize(out, 64<<10), client.NDJSON, MaxRecord)
	var rerr error
	for {
		ev, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rerr = err
			}
			break
		}
		if !*got {
			*got = true
			f.send(ctx, msg{up: true})
		}
		if err := f.deliver(ctx, ev); err != nil {
			rerr = err
			break
		}
	}
	out.Close()
	werr := cmd.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if werr != nil {
		// ssh's and the remote's words may name hosts or paths: debug only.
		f.log.Debug("ssh remote ended", "err", werr, "stderr", stderr.String())
		if rerr == nil {
			rerr = fmt.Errorf("ssh: %w", werr)
		}
	}
	return rerr
}

// limited keeps the first n bytes written to it.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// apply is the one goroutine that feeds the hub: records in batches (what
// is waiting, up to maxBatch), the outage diagnostics, and the linger.
func (f *follower) apply(ctx context.Context) {
	var (
		linger  *time.Timer
		fire    <-chan time.Time
		outage  string // the code reported for the outage going on
		batch   []hub.RemoteRecord
		pending *msg
	)
	stopLinger := func() {
		if linger != nil {
			linger.Stop()
			linger, fire = nil, nil
		}
	}
	defer stopLinger()
	for {
		var m msg
		if pending != nil {
			m, pending = *pending, nil
		} else {
			select {
			case <-ctx.Done():
				return
			case <-fire:
				linger, fire = nil, nil
				f.r.Leave()
				f.mu.Lock()
				f.fresh = true // what the remote replays from its cursor no longer fits
				stop := f.stop
				f.mu.Unlock()
				if stop != nil {
					stop() // the attempt going on resumes from a cursor: start afresh
				}
				continue
			case m = <-f.msgs:
			}
		}
		switch {
		case m.rec != nil:
			batch = append(batch[:0], *m.rec)
			size := m.size
		drain:
			for len(batch) < maxBatch {
				select {
				case n := <-f.msgs:
					if n.rec == nil {
						pending = &n
						break drain
					}
					batch = append(batch, *n.rec)
					size += n.size
				default:
					break drain
				}
			}
			if f.r.Apply(batch) > 0 {
				f.bad()
			}
			clear(batch)
			f.queued.give(size)
		case m.up:
			stopLinger()
			outage = ""
			f.mu.Lock()
			f.logged = 0
			f.mu.Unlock()
		default: // down
			code, text := explain(m.down)
			f.log.Debug("remote out of reach", "err", m.down)
			if code != outage {
				outage = code
				f.r.Diagnostic(code, fmt.Sprintf("remote %s %s", f.c.ID, text))
			}
			if linger == nil {
				linger = time.NewTimer(f.o.Linger)
				fire = linger.C
			}
		}
	}
}

// explain turns why a remote is out of reach into a diagnostic code and
// words that name no address, path or credential.
func explain(err error) (code, text string) {
	var se *client.StatusError
	switch {
	case errors.As(err, &se) && se.Status == 401:
		return CodeUnauthorized, "refused the token; check the remote's tokenFile; retrying"
	case errors.As(err, &se):
		return CodeFailed, fmt.Sprintf("answered %d; retrying", se.Status)
	case errors.Is(err, client.ErrLineTooLong):
		return CodeFailed, fmt.Sprintf("sent a record over %d MiB (or bytes without a line end); retrying with backoff", MaxRecord>>20)
	case errors.Is(err, client.ErrBadEvent):
		return CodeFailed, "sent a stream that breaks its rules; retrying with backoff"
	default:
		return CodeUnreachable, "is not reachable; retrying with backoff"
	}
}

// decode turns one event into a record; nil (and ok) for a record the
// hub does not take: one of another host's session, harnesses, newer
// names. ok is false when the data does not fit its name.
func decode(ev client.Event) (rec *hub.RemoteRecord, ok bool) {
	var d struct {
		Source     string          `json:"source"`
		Host       string          `json:"host"`
		Sessions   json.RawMessage `json:"sessions"`
		Snapshot   json.RawMessage `json:"snapshot"`
		SessionID  string          `json:"sessionId"`
		Event      json.RawMessage `json:"event"`
		Diagnostic json.RawMessage `json:"diagnostic"`
		Activity   json.RawMessage `json:"activity"`
		Ended      json.RawMessage `json:"ended"`
	}
	switch ev.Name {
	case agentbridge.RecordReset, agentbridge.RecordUpsert, agentbridge.RecordRemove, agentbridge.RecordLifecycle, agentbridge.RecordDiagnostic:
	default:
		return nil, true
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil || !validate.ValidHarnessID(d.Source) {
		return nil, false
	}
	if d.Host != "" {
		return nil, true
	}
	rec = &hub.RemoteRecord{Name: ev.Name, Source: d.Source, SessionID: d.SessionID}
	var issues []validate.Issue
	switch ev.Name {
	case agentbridge.RecordReset:
		rec.Sessions, issues = validate.DecodeReset(d.Sessions, nil)
		if len(d.Activity) > 0 && json.Unmarshal(d.Activity, &rec.Activity) != nil {
			return nil, false
		}
		if len(d.Ended) > 0 && json.Unmarshal(d.Ended, &rec.Ended) != nil {
			return nil, false
		}
	case agentbridge.RecordUpsert:
		rec.Snapshot, issues = validate.DecodeSnapshot(d.Snapshot, nil)
		var act *agentbridge.Activity
		if len(d.Activity) > 0 && json.Unmarshal(d.Activity, &act) != nil {
			return nil, false
		}
		if act != nil {
			rec.Activity = map[string]*agentbridge.Activity{rec.Snapshot.ID: act}
		}
		var ended *agentbridge.Ended
		if len(d.Ended) > 0 && json.Unmarshal(d.Ended, &ended) != nil {
			return nil, false
		}
		if ended != nil {
			rec.Ended = map[string]*agentbridge.Ended{rec.Snapshot.ID: ended}
		}
	case agentbridge.RecordLifecycle:
		rec.Event, issues = validate.DecodeEvent(d.Event)
	case agentbridge.RecordDiagnostic:
		rec.Diagnostic, issues = validate.DecodeDiagnostic(d.Diagnostic)
	}
	if len(issues) > 0 {
		return nil, false
	}
	return rec, true
}
