package e2e

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// fakeSSH writes an `ssh` for PATH that runs what the real one would run
// on the remote machine, on this one: `ssh [options] -- HOST agentbridge
// stream …` becomes `agentbridge stream …` with the address and token of
// the bridge that plays HOST (from DIR/HOST.env).
func fakeSSH(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
host=$1
shift
[ "$1" = agentbridge ] || { echo "fake ssh: not an agentbridge command" >&2; exit 255; }
shift
. "` + dir + `/$host.env" || exit 255
exec "` + bin + `" "$@"
`
	if err := os.WriteFile(filepath.Join(dir, "ssh"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sshHost makes host reach bridge b through the fake ssh in dir.
func sshHost(t *testing.T, dir, host string, b *bridge) {
	t.Helper()
	env := fmt.Sprintf("AGENTBRIDGE_ADDR=%s\nAGENTBRIDGE_TOKEN=%s\nexport AGENTBRIDGE_ADDR AGENTBRIDGE_TOKEN\n", b.addr, b.token)
	if err := os.WriteFile(filepath.Join(dir, host+".env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
}

func hostList(es []agentbridge.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Host+"/"+e.Snapshot.ID+"/"+string(e.Snapshot.Status))
	}
	return strings.Join(out, " ")
}

// TestRemotes runs three bridges on loopback: the local one follows devbox
// over HTTP and wsl through ssh (a fake ssh on PATH that runs the other
// bridge's `agentbridge stream`). Remote sessions appear labelled with
// their host; the local stream applied in order equals GET /v1/sessions at
// every revision while the remotes restart; a killed remote is a
// diagnostic naming it and its sessions leave after the linger; restarted,
// it is picked up again.
func TestRemotes(t *testing.T) {
	devbox := startBridge(t)
	wsl := startBridge(t)
	sshDir := fakeSSH(t, agentbridgeBin(t))
	sshHost(t, sshDir, "wsl.local", wsl)
	tokenFile := filepath.Join(t.TempDir(), "devbox.token")
	if err := os.WriteFile(tokenFile, []byte(devbox.token), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := pushConfig + "linger: 1s\nremotes:\n" +
		fmt.Sprintf("  - {id: devbox, url: %q, tokenFile: %q}\n", devbox.base, tokenFile) +
		"  - {id: wsl, ssh: wsl.local}\n"
	local := startBridgeConfig(t, cfg, "PATH="+sshDir+":"+os.Getenv("PATH"))

	up := func(id, status string) map[string]any {
		return map[string]any{"op": "upsert", "session": map[string]any{"id": id, "harness": "example-agent", "status": status}}
	}
	local.publish(up("a", "idle"))
	devbox.publish(up("a", "running"))
	wsl.publish(up("w", "waiting"))

	lc := client.New(local.addr, local.token)
	rec := bridgetest.Follow(t, lc, client.FollowOptions{StreamOptions: client.StreamOptions{Format: client.NDJSON}})
	is := func(want string) func([]agentbridge.Entry) bool {
		return func(es []agentbridge.Entry) bool { return hostList(es) == want }
	}
	rec.Converge(t, lc, nil, is("/a/idle devbox/a/running wsl/w/waiting"))

	// A change on a remote reaches the local stream, labelled, at once.
	start := time.Now()
	devbox.publish(up("a", "blocked"))
	wsl.publish(up("w", "running"))
	rec.Converge(t, lc, nil, is("/a/idle devbox/a/blocked wsl/w/running"))
	t.Logf("remote changes took %v to arrive", time.Since(start)) // the benchmark holds the 100 ms target
	if l, err := lc.Sessions(t.Context(), url.Values{"host": {"wsl"}}); err != nil || hostList(l.Sessions) != "wsl/w/running" {
		t.Errorf("?host=wsl: %v, %v", hostList(l.Sessions), err)
	}

	// Both remotes restart (their push sessions are gone with them); what
	// they report after comes, resumed with their own revisions.
	devbox.stop()
	wsl.stop()
	devbox.start()
	wsl.start()
	devbox.publish(up("b", "idle"))
	wsl.publish(up("w", "blocked"))
	rec.Converge(t, lc, nil, is("/a/idle devbox/b/idle wsl/w/blocked"))

	// Killed: a diagnostic naming it, then its sessions leave after the
	// linger (1 s) while the other's stay.
	devbox.proc.Cmd.Process.Kill()
	<-devbox.done
	rec.Converge(t, lc, nil, is("/a/idle wsl/w/blocked"))
	var named bool
	var diags struct{ Diagnostics []agentbridge.DiagnosticEntry }
	if err := lc.GetJSON(t.Context(), "/v1/diagnostics", nil, &diags); err != nil {
		t.Fatal(err)
	}
	for _, d := range diags.Diagnostics {
		if d.Host == "devbox" && d.Source == hub.RemoteSource && d.Diagnostic.Code == "remote-unreachable" && strings.Contains(d.Diagnostic.Message, "devbox") {
			named = true
		}
		if strings.Contains(d.Diagnostic.Message, devbox.addr) || strings.Contains(d.Diagnostic.Message, devbox.token) {
			t.Errorf("a diagnostic shows the remote's address or token: %q", d.Diagnostic.Message)
		}
	}
	if !named {
		t.Errorf("no remote-unreachable diagnostic naming devbox: %+v", diags.Diagnostics)
	}

	// Restarted: picked up again, with the sessions it has now.
	devbox.start()
	devbox.publish(up("c", "running"))
	rec.Converge(t, lc, nil, is("/a/idle devbox/c/running wsl/w/blocked"))
	rec.CheckIDs(t)
}
