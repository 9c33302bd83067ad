//go:build race

package main

// raceEnabled: the race detector multiplies memory use; bounds on the
// resident set are loosened under it.
const raceEnabled = true
