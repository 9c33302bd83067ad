package hooks

// The agents' hook vocabularies are registered by their source packages.
import _ "github.com/agentbridge/agentbridge/sources/all"
