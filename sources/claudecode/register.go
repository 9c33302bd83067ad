package claudecode

import (
	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
)

func init() {
	info := New(Options{ConfigDir: "/"}).Info() // "/" has no sessions/: the static description
	info.Observes["waiting"] = agentbridge.Observe{How: agentbridge.Observed, From: "registry"}
	sources.Register(sources.Registration{
		Info:        info,
		HomeEnv:     EnvConfigDir,
		DefaultHome: sources.HomeUnder(".claude"),
		New: func(o sources.Options) hub.Source {
			return New(Options{ConfigDir: o.Home, Window: o.Window, Linger: o.Linger, Logger: o.Logger})
		},
	})
}
