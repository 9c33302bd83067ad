package agentbridge

import _ "embed"

// OpenAPI is the bridge's OpenAPI document (openapi.yaml at the repository
// root), served at GET /openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
