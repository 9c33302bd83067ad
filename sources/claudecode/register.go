package claudecode

import "github.com/agentbridge/agentbridge/sources"

func init() { sources.RegisterAgent(agent) }
