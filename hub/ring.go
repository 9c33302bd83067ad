package hub

import (
	"sort"

	"github.com/agentbridge/agentbridge"
)

// entry is one committed record plus what a filtered subscriber needs to
// decide whether, and in which form, it sees it. Entries are immutable once
// committed: the ring and every subscriber queue share them.
type entry struct {
	rec       Record
	source    string
	host      string                           // the remote it came from; "" for this bridge
	sessionID string                           // upsert, remove, lifecycle
	snap      *agentbridge.Snapshot            // upsert; lifecycle: the snapshot the event leaves (before removal for session.stopped)
	sessions  []agentbridge.Snapshot           // reset: exactly the sessions in the record
	act       *agentbridge.Activity            // upsert: the activity in the record
	acts      map[string]*agentbridge.Activity // reset: the activity of its sessions
	ended     *agentbridge.Ended               // upsert: the end in the record
	endeds    map[string]*agentbridge.Ended    // reset: the ends of its sessions
}

// ring keeps the most recent entries, capped by count and by encoded bytes.
// Revisions in it are strictly increasing.
type ring struct {
	buf      []*entry
	head, n  int
	bytes    int
	maxBytes int
}

func newRing(count, maxBytes int) *ring {
	return &ring{buf: make([]*entry, count), maxBytes: maxBytes}
}

// push appends e and evicts the oldest entries until both caps hold again;
// it returns the revision of the newest evicted entry (0 if none).
func (r *ring) push(e *entry) (evicted uint64) {
	if r.n == len(r.buf) {
		evicted = r.pop()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = e
	r.n++
	r.bytes += len(e.rec.Data)
	for r.bytes > r.maxBytes && r.n > 1 {
		evicted = r.pop()
	}
	return evicted
}

func (r *ring) pop() uint64 {
	e := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	r.bytes -= len(e.rec.Data)
	return e.rec.Rev
}

func (r *ring) at(i int) *entry { return r.buf[(r.head+i)%len(r.buf)] }

// after returns every entry with a revision above since, oldest first.
func (r *ring) after(since uint64) []*entry {
	i := sort.Search(r.n, func(i int) bool { return r.at(i).rec.Rev > since })
	out := make([]*entry, 0, r.n-i)
	for ; i < r.n; i++ {
		out = append(out, r.at(i))
	}
	return out
}
