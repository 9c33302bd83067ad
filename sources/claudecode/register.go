package claudecode

import (
	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
)

func init() {
	info := New(Options{Home: "/"}).Info() // "/" has no sessions/: the static description
	info.Observes["waiting"] = agentbridge.Observe{How: agentbridge.Observed, From: "registry"}
	hooks := Hooks()
	sources.RegisterNew(sources.Registration{
		Info:        info,
		HomeEnv:     EnvConfigDir,
		DefaultHome: sources.HomeUnder(".claude"),
		Hooks:       &hooks,
	}, New)
}
