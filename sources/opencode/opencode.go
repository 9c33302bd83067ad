// Package opencode is the source of opencode (sst/opencode, npm
// opencode-ai), which keeps its sessions in a SQLite database in WAL mode
// rather than in a journal file: $XDG_DATA_HOME/opencode/opencode.db
// (default ~/.local/share/opencode), and opencode-<channel>.db for the
// other release channels.
//
// Nothing is polled. A watch on the data directory (inotify, through
// fsnotify) sees every write to the database and its -wal file; each wake
// runs read-only queries (mode=ro, no immutable, a 50 ms busy timeout) of
// what changed: the rows of the database's own append-only event table
// after the last rowid read (session.created / session.updated /
// session.deleted / message.updated / message.part.updated, each carrying
// the whole row), or, in databases from before that table, the rows whose
// time_updated reached the latest one seen. A database that is busy (a
// checkpoint or recovery in progress) is read again on its next change,
// never on a timer. The start reads the sessions updated within the
// window from the tables themselves. The older file storage
// (storage/session|message|part/**.json) is read whole, at the start and
// whenever a file changes (the shared tailer's whole files).
//
// A pending permission is not in the database (the tool part just stays
// running), but opencode's log (log/*.log under the same home) gets
// "message=asking id=per_… permission=… patterns=[…]" at that moment: the
// log is followed as a second journal (the shared tailer), and the
// request becomes wait.started on the session whose tool is running; it
// ends when that tool part moves on. The mapping is in README.md.
package opencode

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
)

// The source's identity.
const (
	ID          = "opencode"
	DisplayName = "opencode"
	Harness     = "opencode"
	EnvDataHome = "XDG_DATA_HOME" // the home is $XDG_DATA_HOME/opencode
)

// agent describes the source. Its run is its own (follow): a watch of
// the databases lives beside the tailer; its Metrics count the queries.
var agent = &sources.Agent{Single: sources.Single{
	ID: ID, DisplayName: DisplayName, Harness: Harness, HarnessName: "opencode",
	Env:         []string{EnvDataHome},
	DefaultHome: DefaultHome,
	Observes: map[string]agentbridge.Observe{
		"waiting":   {How: agentbridge.Observed, From: "log"},      // log/opencode.log: message=asking
		"exited":    {How: agentbridge.Inferred, From: "process"},  // the opencode process in the session's directory, then a pidfd
		"subagents": {How: agentbridge.Observed, From: "database"}, // session.parent_id
		"title":     {How: agentbridge.Observed, From: "database"}, // session.title
		"model":     {How: agentbridge.Observed, From: "database"}, // the assistant message's modelID
	},
}, Run: follow, Metrics: queryCounter{}}

// DefaultHome is opencode's data directory: $XDG_DATA_HOME/opencode when
// that is absolute, else ~/.local/share/opencode.
func DefaultHome(getenv func(string) string) string {
	if x := getenv(EnvDataHome); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "opencode")
	}
	return sources.HomeUnder(".local", "share", "opencode")(getenv)
}

func init() { sources.RegisterAgent(agent) }

// Source follows one opencode home. It implements hub.Source, and
// prometheus.Collector (its query count).
type Source = sources.CollectingSource

// New returns the source for o.Home (opencode's data directory).
func New(o sources.Options) *Source {
	return &Source{AgentSource: agent.New(o), Collector: agent.Metrics}
}

// Agent says which processes are opencode's: its native binary (one
// process per TUI, its server inside it), or Node or Bun running the
// opencode package's script.
var Agent = proc.Agent{Names: []string{"opencode"}, Runtimes: []string{"node", "bun"}, Scripts: []string{"opencode-ai"}}

// dbName matches the databases: opencode.db and opencode-<channel>.db.
var dbName = regexp.MustCompile(`^opencode(-[A-Za-z0-9._]{1,64})?\.db$`)

// dbOf returns the database a file of the home belongs to (the database
// itself or its -wal), or "".
func dbOf(home, p string) string {
	if filepath.Dir(p) != home {
		return ""
	}
	base := strings.TrimSuffix(filepath.Base(p), "-wal")
	if !dbName.MatchString(base) {
		return ""
	}
	return filepath.Join(home, base)
}

// queriesDesc describes the queries counter exposed at GET /metrics.
var queriesDesc = prometheus.NewDesc("agentbridge_opencode_queries_total",
	"Read-only queries the opencode source ran against opencode's databases in this process; none while they do not change.", nil, nil)

// queryCounter is the source's prometheus.Collector (Agent.Metrics): the
// hub exposes its query count with its own metrics, so that a client (the
// live suite) can check that an idle bridge queries nothing, without a
// debug interface.
type queryCounter struct{}

// Describe sends the query count's description.
func (queryCounter) Describe(ch chan<- *prometheus.Desc) { ch <- queriesDesc }

// Collect sends the query count.
func (queryCounter) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(queriesDesc, prometheus.CounterValue, float64(queries.Load()))
}

// follow follows the home o.Home until ctx ends (Agent.Run).
func follow(ctx context.Context, st hub.Start, o sources.Options) error {
	home := filepath.Clean(o.Home)
	logs, storage := filepath.Join(home, "log"), filepath.Join(home, "storage")
	ctx, cancel := context.WithCancel(ctx)
	var h *handler
	w := newDirWatch(home, o.Logger)
	defer func() {
		cancel()
		w.wait()
		if h != nil {
			h.closeAll()
		}
	}()
	return sources.Follow(ctx, st, sources.FollowConfig{
		Tail: sources.TailConfig{
			Roots:  []string{logs, storage},
			Match:  func(p string) bool { return filepath.Dir(p) == logs && strings.HasSuffix(p, ".log") },
			Dirs:   func(p string) bool { return storageDir(storage, p) },
			Window: o.Window,
		},
		Linger:    o.Linger,
		Logger:    o.Logger,
		Agent:     Agent,
		Processes: o.Processes,
	}, func(ss *sources.Sessions) sources.Handler {
		h = newHandler(ctx, ss, home, o.Window, w, o.Logger)
		return h
	})
}
