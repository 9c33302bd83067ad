package main

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Set at build time (make, GoReleaser):
//
//	go build -ldflags "-X main.version=v0.4.0 -X main.commit=0df3eff1a2b3 -X main.date=2026-12-04T15:44:37Z"
//
// Releases are tagged v0.MINOR.PATCH (see docs/install.md); empty values
// are taken from the build information.
var version, commit, date string

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version, commit and build date",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(a.stdout, "agentbridge", versionLine())
			return err
		},
	}
}

// versionString is the version alone (healthz, logs, man pages).
func versionString() string {
	b := buildOf(version, commit, date, buildInfo())
	return b.version
}

// versionLine is what --version prints after the name.
func versionLine() string { return buildOf(version, commit, date, buildInfo()).String() }

func buildInfo() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
}

// build says which agentbridge this is.
type build struct{ version, commit, date string }

// buildOf is the build from the link-time values, each one missing taken
// from the build information: the module version (a tag, or a Go
// pseudo-version for `go install …@commit`), the VCS revision and whether
// the tree was modified ("-dirty"). Without either: "dev".
func buildOf(version, commit, date string, bi *debug.BuildInfo) build {
	b := build{version: version, commit: commit, date: date}
	if bi != nil {
		if b.version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.version = bi.Main.Version
		}
		if b.commit == "" {
			var rev, dirty string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					if s.Value == "true" {
						dirty = "-dirty"
					}
				}
			}
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if rev != "" {
				b.commit = rev + dirty
			}
		}
	}
	if b.version == "" {
		b.version = "dev"
	}
	return b
}

// String is the version, then the commit (unless the version already
// names it, as a pseudo-version or `git describe` between tags does) and
// the build date when known:
// "v0.4.0 (commit 0df3eff1a2b3, built 2026-12-04T15:44:37Z)".
func (b build) String() string {
	var more []string
	if b.commit != "" && !namesCommit(b.version, b.commit) {
		more = append(more, "commit "+b.commit)
	}
	if b.date != "" {
		more = append(more, "built "+b.date)
	}
	if len(more) == 0 {
		return b.version
	}
	return b.version + " (" + strings.Join(more, ", ") + ")"
}

// versionHash finds the commit a version names: Go's pseudo-version ends
// in 12 hex digits (v0.0.0-20261204154437-0df3eff1a2b3), `git describe`
// in g and at least 7 (v0.4.0-3-g0df3eff, maybe -dirty).
var versionHash = regexp.MustCompile(`(?:-\d{14}-|-g)([0-9a-f]{7,40})(?:-dirty)?$`)

// namesCommit reports whether version names commit (an abbreviation of
// one the other).
func namesCommit(version, commit string) bool {
	m := versionHash.FindStringSubmatch(version)
	if m == nil {
		return false
	}
	c := strings.TrimSuffix(commit, "-dirty")
	return strings.HasPrefix(c, m[1]) || strings.HasPrefix(m[1], c)
}
