package install

// The harnesses with hooks, and where their hooks go, are registered by
// their source packages.
import _ "github.com/agentbridge/agentbridge/sources/all"
