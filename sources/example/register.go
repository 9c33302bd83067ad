package example

import (
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
)

func init() {
	sources.Register(sources.Registration{
		Info:     (&Source{}).Info(),
		HomeEnv:  EnvHome,
		Optional: true, // the reference agent: only when its home is named
		New: func(o sources.Options) hub.Source {
			return New(Config{Home: o.Home, Window: o.Window, Linger: o.Linger, Logger: o.Logger})
		},
	})
}
