package api

// The agents' hook vocabularies (POST /v1/hooks/{source}) are registered
// by their source packages.
import _ "github.com/agentbridge/agentbridge/sources/all"
