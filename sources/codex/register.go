package codex

import (
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
)

func init() {
	sources.Register(sources.Registration{
		Info:        (&Source{}).Info(),
		HomeEnv:     EnvHome,
		DefaultHome: sources.HomeUnder(".codex"),
		New: func(o sources.Options) hub.Source {
			return New(Options{Home: o.Home, Window: o.Window, Linger: o.Linger, Logger: o.Logger})
		},
	})
}
