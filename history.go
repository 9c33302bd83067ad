package agentbridge

// This file is the wire vocabulary of the bridge's history: what GET
// /v1/history lists (sessions the bridge saw, with their turns and waits)
// and what GET /v1/usage sums. The history package keeps it; clients read
// it without depending on the server. Times are epoch milliseconds; 0 is
// unknown (or, for an end, not ended yet).

// HistorySession is one session as GET /v1/history lists it: what the
// bridge saw of it, live or folded again from its journal after a restart.
type HistorySession struct {
	Source  string `json:"source"`
	Host    string `json:"host,omitempty"` // the remote bridge that reported it; "" for this bridge
	ID      string `json:"id"`
	Harness string `json:"harness"`
	Title   string `json:"title,omitempty"`
	Model   string `json:"model,omitempty"` // the last model it named
	Cwd     string `json:"cwd,omitempty"`
	// Project is the root of the project Cwd lies in (the repository's
	// top, or Cwd itself when it is in none).
	Project   string `json:"project,omitempty"`
	StartedAt int64  `json:"startedAt,omitempty"` // its first event's time
	LastAt    int64  `json:"lastAt,omitempty"`    // its last event's time
	Ended     *Ended `json:"ended,omitempty"`     // how it ended; nil while it has not (or the bridge never saw it end)
	// Usage sums the tokens of its turns (and of model calls outside a
	// turn); Cost estimates their price, nil when no token of it has a
	// known price.
	Usage     Usage         `json:"usage"`
	Cost      *Cost         `json:"cost,omitempty"`
	ActiveMs  int64         `json:"activeMs"`  // the summed length of its ended turns
	WaitingMs int64         `json:"waitingMs"` // the summed time it waited for the user
	Turns     []HistoryTurn `json:"turns"`     // in order; at most the query's limit of turns per session
}

// HistoryTurn is one turn of a HistorySession.
type HistoryTurn struct {
	Index     int     `json:"index"`        // 0 for the session's first turn
	ID        string  `json:"id,omitempty"` // the turnId its journal named, if any
	StartedAt int64   `json:"startedAt,omitempty"`
	EndedAt   int64   `json:"endedAt,omitempty"` // 0 while it runs (or its end was never seen)
	Outcome   Outcome `json:"outcome,omitempty"` // "" while it runs; cancelled for one cut by the process's end
	Model     string  `json:"model,omitempty"`   // the model named when it ended (or last, while it runs)
	Usage     Usage   `json:"usage"`
	Cost      *Cost   `json:"cost,omitempty"`
	Tools     int     `json:"tools"` // the tool calls it made
	// Waits lists the times it waited for the user, in order.
	Waits []HistoryWait `json:"waits"`
}

// HistoryWait is one time a turn waited for the user.
type HistoryWait struct {
	ID        string `json:"id,omitempty"`
	State     Status `json:"state"`            // waiting or blocked
	Reason    string `json:"reason,omitempty"` // what it waited for, as the snapshot's waitingFor showed it
	StartedAt int64  `json:"startedAt,omitempty"`
	EndedAt   int64  `json:"endedAt,omitempty"` // 0 while it waits
	// Answered says how the wait ended: one of the WaitAnswer* values, ""
	// while it waits.
	Answered string `json:"answered,omitempty"`
}

// How a wait ended (HistoryWait.Answered).
const (
	WaitAnswered   = "answered"    // the agent went on (wait.finished, or its hook said so)
	WaitTurnEnded  = "turn-ended"  // the turn ended while it waited
	WaitExited     = "exited"      // the process ended while it waited
	WaitStopped    = "stopped"     // the session was stopped while it waited
	WaitFromBridge = "from-bridge" // answered through the bridge (POST …/answer)
)

// Cost is an estimate of what tokens cost, from the bridge's price table
// (or the user's prices in its configuration). It is never exact: a
// vendor's bill may differ (discounts, tiers, batch prices).
type Cost struct {
	USD float64 `json:"usd"`
	// Estimate is always true: the figure is estimated, not billed.
	Estimate bool `json:"estimate"`
	// PricesAsOf is the date (YYYY-MM-DD) of the price table used; for a
	// user's own prices, "config".
	PricesAsOf string `json:"pricesAsOf"`
	// UnpricedTokens counts the tokens of models with no known price,
	// left out of USD.
	UnpricedTokens int64 `json:"unpricedTokens,omitempty"`
}

// UsageTable is what GET /v1/usage answers: usage summed by one key (a
// day, a project, a model or a harness), optionally split by a second.
type UsageTable struct {
	By    string     `json:"by"`              // day, project, model or harness
	Split string     `json:"split,omitempty"` // a second key each row is split by ("" for none)
	From  int64      `json:"from"`            // the range summed, epoch ms: [from, to)
	To    int64      `json:"to"`
	TZ    string     `json:"tz"` // the time zone days are counted in (IANA name)
	Rows  []UsageRow `json:"rows"`
	Total UsageRow   `json:"total"` // the sum of every row (its key "")
}

// UsageRow is one row of a UsageTable. Turns are counted where they
// started; usage where its model call was recorded.
type UsageRow struct {
	Key       string `json:"key"`             // 2006-01-02 for by=day
	SplitKey  string `json:"split,omitempty"` // the row's value of the table's Split
	Usage     Usage  `json:"usage"`
	Tokens    int64  `json:"tokens"`         // the sum of Usage's four counts
	Cost      *Cost  `json:"cost,omitempty"` // nil when no token of the row has a known price
	Sessions  int    `json:"sessions"`
	Turns     int    `json:"turns"`
	ActiveMs  int64  `json:"activeMs"`  // summed length of turns
	WaitingMs int64  `json:"waitingMs"` // summed time waiting for the user
}

// The keys of GET /v1/usage's by and split.
const (
	UsageByDay     = "day"
	UsageByProject = "project"
	UsageByModel   = "model"
	UsageByHarness = "harness"
)

// UsageKeys lists the keys usage can be summed by.
var UsageKeys = []string{UsageByDay, UsageByProject, UsageByModel, UsageByHarness}
