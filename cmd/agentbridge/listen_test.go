package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNonLoopbackRefused: every way of asking for a non-loopback
// listen address without a token (or without saying so) is refused before
// anything is printed, and the token cannot be given in argv.
func TestNonLoopbackRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  []string
		yaml string
		want string
	}{
		{"empty host means every interface", []string{"--listen=:0"}, nil, "", "listen"},
		{"IPv6 any", []string{"--listen=[::]:0"}, nil, "", "allowRemote"},
		{"LAN address", []string{"--listen=192.168.1.10:0"}, nil, "", "allowRemote"},
		{"host name", []string{"--listen=bridge.example:0"}, nil, "", "listen"},
		{"IPv6 any with auth none", []string{"--listen=[::]:0", "--allow-remote", "--auth=none"}, nil, "", "auth none"},
		{"environment only", nil, []string{"AGENTBRIDGE_LISTEN=0.0.0.0:0", "AGENTBRIDGE_ALLOW_REMOTE=true", "AGENTBRIDGE_AUTH=none"}, "", "auth none"},
		{"config file only", nil, []string{"AGENTBRIDGE_CONFIG=CFG"}, "listen: 0.0.0.0:0\nallowRemote: true\nauth: none\n", "auth none"},
		{"config allows, flag turns auth off", []string{"--auth=none"}, []string{"AGENTBRIDGE_CONFIG=CFG"}, "listen: 0.0.0.0:0\nallowRemote: true\n", "auth none"},
		{"token in argv", []string{"--token=abcdefabcdefabcdefabcdef"}, nil, "", "unknown flag: --token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			cfg := filepath.Join(home, "c.yaml")
			if err := os.WriteFile(cfg, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"HOME=" + home}
			for _, e := range tt.env {
				env = append(env, strings.ReplaceAll(e, "CFG", cfg))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errb logBuffer
			err := serveMain(ctx, tt.args, env, &out, &errb)
			if err == nil {
				t.Fatalf("serveMain(%q, %q) = nil, want a refusal", tt.args, tt.env)
			}
			if msg := err.Error() + " " + errb.String(); !strings.Contains(msg, tt.want) {
				t.Errorf("serveMain(%q) = %v (stderr %q), want it to name %q", tt.args, err, errb.String(), tt.want)
			}
			if out.String() != "" {
				t.Errorf("stdout %q: nothing may be printed (no URL, no token) when refusing", out.String())
			}
			if _, err := os.Stat(filepath.Join(home, ".local", "state", "agentbridge", "token")); err == nil && tt.name != "token in argv" {
				t.Errorf("a token file was made although the bridge refused to start")
			}
		})
	}
}
