// Package history keeps what the bridge saw after it is gone from the live
// view: an embedded SQLite database in the state directory, written from
// the hub's facts (hub.Recorder) by a writer that never slows the live
// path, read by GET /v1/history and GET /v1/usage and the CLI's history and
// usage commands, with token costs estimated from a dated price table.
package history

import "time"

// Query selects sessions of the history: those whose span (first to last
// event) meets [From, To) — first event before To, last at or after From
// — filtered by the fields set (empty: all).
type Query struct {
	From, To time.Time
	Project  string // the project root (agentbridge.HistorySession.Project)
	Harness  string
	Source   string
	Host     string // a remote's id, or agentbridge.LocalHost
	// Outcome selects sessions with a turn that ended so
	// (agentbridge.Outcome), or "running" for one with a turn still open.
	Outcome string
	Limit   int // sessions at most, newest first; 0: DefaultLimit
	Turns   int // turns kept per session (the last ones); 0: DefaultTurns
}

// UsageQuery sums usage over the sessions a Query selects.
type UsageQuery struct {
	Query
	By    string         // one of agentbridge.UsageKeys
	Split string         // "" or another of agentbridge.UsageKeys
	Loc   *time.Location // days are counted in it; nil: time.Local
}

// Defaults of a Query.
const (
	DefaultLimit = 200
	MaxLimit     = 5000
	DefaultTurns = 500
)

// DefaultRetention is how long the history keeps a session after its last
// event when Options.Retention is 0.
const DefaultRetention = 90 * 24 * time.Hour

// PruneResult says what a prune removed.
type PruneResult struct {
	Sessions int `json:"sessions"`
	Turns    int `json:"turns"`
}

// Price is what one model's tokens cost, in US dollars per million
// tokens. Model matches a model name exactly, or as a prefix when it ends
// in "*" ("claude-sonnet-4*"); the longest match wins. A user's prices
// (Options.Prices, from the configuration's history.prices) come before the
// built-in table.
type Price struct {
	Model      string  `json:"model" koanf:"model"`
	Input      float64 `json:"input" koanf:"input"`
	Output     float64 `json:"output" koanf:"output"`
	CacheRead  float64 `json:"cacheRead" koanf:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite" koanf:"cacheWrite"`
}
