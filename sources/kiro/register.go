package kiro

import "github.com/agentbridge/agentbridge/sources"

func init() {
	sources.RegisterNew(sources.Registration{
		Info:        (&Source{}).Info(),
		HomeEnv:     EnvHome,
		DefaultHome: sources.HomeUnder(".kiro"),
	}, New)
}
