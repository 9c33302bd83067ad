package bridgetest

import (
	"context"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/history"
)

// History is a fake api.History for Options.History: it answers its
// fields and records the queries it was asked.
type History struct {
	mu       sync.Mutex
	sessions []agentbridge.HistorySession
	table    agentbridge.UsageTable
	pruned   history.PruneResult
	err      error
	queries  []history.Query
	usage    []history.UsageQuery
	prunes   []time.Time
	answered []string // host/source/session of each answer through the bridge
}

// NewHistory returns a fake history that answers sessions to every query,
// table (its By and Split those asked) to every usage query and pruned to
// every prune.
func NewHistory(sessions []agentbridge.HistorySession, table agentbridge.UsageTable, pruned history.PruneResult) *History {
	return &History{sessions: sessions, table: table, pruned: pruned}
}

// Fail makes every later call fail with err (nil: answer again).
func (h *History) Fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
}

// Sessions records q and answers the sessions.
func (h *History) Sessions(_ context.Context, q history.Query) ([]agentbridge.HistorySession, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queries = append(h.queries, q)
	return h.sessions, h.err
}

// Usage records q and answers the table.
func (h *History) Usage(_ context.Context, q history.UsageQuery) (agentbridge.UsageTable, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage = append(h.usage, q)
	t := h.table
	t.By, t.Split = q.By, q.Split
	return t, h.err
}

// Prune records before and answers the prune's result.
func (h *History) Prune(_ context.Context, before time.Time) (history.PruneResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.prunes = append(h.prunes, before)
	return h.pruned, h.err
}

// Answered records an answer through the bridge.
func (h *History) Answered(host, source, sessionID string, at int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answered = append(h.answered, host+"/"+source+"/"+sessionID)
}

// Queries returns the queries Sessions was asked, in order.
func (h *History) Queries() []history.Query {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]history.Query(nil), h.queries...)
}

// UsageQueries returns the queries Usage was asked, in order.
func (h *History) UsageQueries() []history.UsageQuery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]history.UsageQuery(nil), h.usage...)
}

// Prunes returns the times Prune was asked to prune before, in order.
func (h *History) Prunes() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.prunes...)
}

// AnsweredAt returns the sessions (host/source/id) answered through the
// bridge so far, in order.
func (h *History) AnsweredAt() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.answered...)
}
