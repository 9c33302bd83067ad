package vibe

import (
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
)

func init() {
	sources.Register(sources.Registration{
		Info:        (&Source{}).Info(),
		HomeEnv:     EnvHome,
		DefaultHome: sources.HomeUnder(".vibe"),
		New:         func(o sources.Options) hub.Source { return New(o) },
	})
}
