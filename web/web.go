// Package web holds the embedded dashboard and its JavaScript client
// (agentbridge-client.js), served by the bridge at "/".
package web

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// FS returns the dashboard's files.
func FS() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}

// Handler serves the dashboard's files.
func Handler() http.Handler { return http.FileServerFS(FS()) }
