package main

import (
	"bytes"
	"context"
	"io"
	"runtime/debug"
	"testing"
)

func TestBuildOf(t *testing.T) {
	vcs := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/agentbridge/agentbridge", Version: "(devel)"}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	pseudo := vcs()
	pseudo.Main.Version = "v0.0.0-20261204154437-0df3eff1a2b3"
	tagged := vcs()
	tagged.Main.Version = "v0.4.0"
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  string
	}{
		{name: "release (ldflags)", version: "v0.4.0", commit: "0df3eff1a2b3", date: "2026-12-04T15:44:37Z", bi: vcs(),
			want: "v0.4.0 (commit 0df3eff1a2b3, built 2026-12-04T15:44:37Z)"},
		{name: "between tags (make)", version: "v0.4.0-3-g0df3eff", commit: "0df3eff1a2b3", date: "2026-12-04T15:44:37Z", bi: vcs(),
			want: "v0.4.0-3-g0df3eff (built 2026-12-04T15:44:37Z)"},
		{name: "between tags, modified (make)", version: "v0.4.0-3-g0df3eff-dirty", commit: "0df3eff1a2b3", bi: vcs(),
			want: "v0.4.0-3-g0df3eff-dirty"},
		{name: "a tag whose name ends in hex is not a commit", version: "v0.4.0-beef", commit: "0df3eff1a2b3", bi: vcs(),
			want: "v0.4.0-beef (commit 0df3eff1a2b3)"},
		{name: "describe of another commit", version: "v0.4.0-3-gabcdef1", commit: "0df3eff1a2b3", bi: vcs(),
			want: "v0.4.0-3-gabcdef1 (commit 0df3eff1a2b3)"},
		{name: "snapshot (GoReleaser)", version: "v0.0.1-snapshot", commit: "0df3eff1a2b3", date: "2026-12-04T15:44:37Z", bi: vcs(),
			want: "v0.0.1-snapshot (commit 0df3eff1a2b3, built 2026-12-04T15:44:37Z)"},
		{name: "go install @commit: the commit once", bi: pseudo, want: "v0.0.0-20261204154437-0df3eff1a2b3"},
		{name: "go install @tag", bi: tagged, want: "v0.4.0"},
		{name: "go build in a checkout", bi: vcs("vcs.revision", "0df3eff1a2b3c4d5e6f7", "vcs.modified", "true"),
			want: "dev (commit 0df3eff1a2b3-dirty)"},
		{name: "nothing known", want: "dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildOf(tc.version, tc.commit, tc.date, tc.bi).String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVersionPrintsVersionCommitAndDateOnce(t *testing.T) {
	oldV, oldC, oldD := version, commit, date
	version, commit, date = "v9.9.9", "0123456789ab", "2026-12-04T00:00:00Z"
	defer func() { version, commit, date = oldV, oldC, oldD }()
	const want = "agentbridge v9.9.9 (commit 0123456789ab, built 2026-12-04T00:00:00Z)\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out bytes.Buffer
		if code := run(context.Background(), args, &out, io.Discard); code != 0 || out.String() != want {
			t.Errorf("agentbridge %s = %d %q, want 0 %q", args[0], code, out.String(), want)
		}
	}
	if v := versionString(); v != "v9.9.9" {
		t.Errorf("versionString() = %q, want the version alone", v)
	}
}
