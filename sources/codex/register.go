package codex

import "github.com/agentbridge/agentbridge/sources"

func init() { sources.RegisterAgent(agent) }
