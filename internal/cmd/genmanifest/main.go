// Command genmanifest writes the harness list and the environment
// variables of the Terminay extension's manifest from the source
// registry (package terminaymanifest). It is run by go generate in
// sources/all and by make manifest:
//
//	genmanifest extensions/terminay/package.json
package main

import (
	"fmt"
	"os"

	"github.com/agentbridge/agentbridge/internal/terminaymanifest"
	"github.com/agentbridge/agentbridge/sources"
	_ "github.com/agentbridge/agentbridge/sources/all"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genmanifest path/to/package.json")
		os.Exit(2)
	}
	if _, err := terminaymanifest.WriteFile(os.Args[1], sources.Registered()); err != nil {
		fmt.Fprintln(os.Stderr, "genmanifest:", err)
		os.Exit(1)
	}
}
