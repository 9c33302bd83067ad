package claudecode

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
)

// Options configure a Source: Home is Claude Code's configuration
// directory (the value of CLAUDE_CONFIG_DIR, else ~/.claude: see
// DefaultConfigDir), required; a nil Logger discards.
type Options = sources.Options

// DefaultConfigDir returns the directory Claude Code itself uses:
// $CLAUDE_CONFIG_DIR when set (and absolute), else ~/.claude.
func DefaultConfigDir() (string, error) { return sources.DefaultHome(SourceID) }

// Source reports Claude Code sessions: the sources.AgentSource of the
// agent this package registers.
type Source = sources.AgentSource

// New returns a Source for o. It reads nothing yet, except whether the
// live registry directory exists, which decides what Info says about
// waiting: "waiting" is observed when the Claude Code install keeps the
// live registry (sessions/<pid>.json, 2.1.x) at the time the source is
// created, inferred otherwise (from a pending AskUserQuestion or
// ExitPlanMode tool); a registry that appears later is used all the same,
// but Info does not change while the hub runs.
func New(o Options) *Source {
	o.Home = filepath.Clean(o.Home)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return agent.New(o)
}

// single is what Info says of a source whose home keeps the live
// registry, and what the registration says.
var single = sources.Single{
	ID: SourceID, DisplayName: DisplayName, Harness: Harness, HomeEnv: EnvConfigDir,
	DefaultHome: sources.HomeUnder(".claude"),
	Observes: map[string]agentbridge.Observe{
		"waiting":   {How: agentbridge.Observed, From: "registry"},
		"exited":    {How: agentbridge.Observed, From: "process"},
		"subagents": {How: agentbridge.Observed, From: "journal"},
		"title":     {How: agentbridge.Observed, From: "journal"},
		"model":     {How: agentbridge.Observed, From: "journal"},
	},
	Hooks: new(Hooks()),
}

// agent is Claude Code's registration. Its source follows the registry
// and the transcripts with sources.Follow. The registry root comes first,
// so that its files are read before the transcripts at every scan: the
// transcripts of live processes are bound (and read even when old) from
// the start (the handler's Recent). The registry files and the subagents'
// .meta.json sidecars are whole files (sources.WholeFiles), read through
// sources.ReadSmall.
var agent = &sources.Agent{
	Single:  single,
	Process: Agent,
	InfoFor: func(o Options) agentbridge.SourceInfo {
		info := single.Info()
		if fi, err := os.Stat(registryDir(o)); err != nil || !fi.IsDir() {
			info.Observes["waiting"] = agentbridge.Observe{How: agentbridge.Inferred, From: "journal"}
		}
		return info
	},
	Tail: func(o Options) sources.TailConfig {
		projects, jobs := projectsDir(o), jobsDir(o)
		return sources.TailConfig{
			Roots: []string{registryDir(o), jobs, projects},
			Match: func(p string) bool { return strings.HasPrefix(p, projects+"/") && isTranscript(p) },
			Dirs: func(p string) bool {
				if rel, ok := strings.CutPrefix(p, jobs+"/"); ok {
					return !strings.Contains(rel, "/") // jobs/<short>, not its tmp/
				}
				return strings.HasPrefix(p, projects+"/")
			},
		}
	},
	Handler: sources.HandlerFunc(func(o Options, ss *sources.Sessions) sources.Handler { return newHandler(o, ss) }),
}

func projectsDir(o Options) string { return filepath.Join(o.Home, "projects") }
func registryDir(o Options) string { return filepath.Join(o.Home, "sessions") }

// jobsDir is where the daemon keeps background sessions' state (jobs.go).
func jobsDir(o Options) string { return filepath.Join(o.Home, "jobs") }

// Agent is how a Claude Code process is told from others: its executable
// or command name is "claude" (the native build, whose executable lies in
// …/claude/versions/), or a Node or Bun process runs the claude-code
// package's script. Claude Code names its own process in the registry
// (sessions/<pid>.json); a registry file naming a live process that is not
// Claude Code (a file left behind whose pid now names another program, or
// planted) binds nothing and is counted under invalid-registry-file.
// Transcripts are never bound by who holds them open: Claude Code does not
// keep them open.
var Agent = proc.Agent{Names: []string{"claude"}, Runtimes: []string{"node", "bun"}, Packages: []string{"claude-code"}, Versions: []string{"claude"}}

// isTranscript picks the files the tailer follows: JSONL transcripts under
// projects/ (root sessions and subagents alike).
func isTranscript(p string) bool { return strings.HasSuffix(p, ".jsonl") }

// fileKind tells what a transcript path is.
type fileKind int

const (
	rootFile    fileKind = iota // projects/<slug>/<sessionId>.jsonl
	childFile                   // projects/<slug>/<sessionId>/subagents/**/agent-<id>.jsonl (2.1.2+)
	besideFile                  // projects/<slug>/agent-<id>.jsonl (2.0.x sidechain beside the session)
	ignoredFile                 // anything else (workflow journals, …)
)

// classify returns the kind of path below projects/, the parent (or own)
// Claude session id, and the subagent's agentId for child files.
func classify(projects, p string) (k fileKind, sessionID, agentID string) {
	rel, err := filepath.Rel(projects, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return ignoredFile, "", ""
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	name := strings.TrimSuffix(parts[len(parts)-1], ".jsonl")
	switch {
	case len(parts) == 2 && strings.HasPrefix(name, "agent-"):
		return besideFile, "", strings.TrimPrefix(name, "agent-")
	case len(parts) == 2:
		return rootFile, name, ""
	case len(parts) >= 4 && parts[2] == "subagents" && strings.HasPrefix(name, "agent-"):
		return childFile, parts[1], strings.TrimPrefix(name, "agent-")
	}
	return ignoredFile, "", ""
}
