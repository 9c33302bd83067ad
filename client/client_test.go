package client_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/client"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDiscover checks every place an address and a token come from, and
// which wins.
func TestDiscover(t *testing.T) {
	const fileToken = "file-token-0123456789abcdef"
	const envToken = "env-token-0123456789abcdef"
	tests := []struct {
		name                string
		flag                string
		env                 []string
		config              string
		stateFile, homeFile bool // the token file under XDG_STATE_HOME, under ~/.local/state
		wantAddr, wantToken string
	}{
		{name: "default listen", wantAddr: "127.0.0.1:7391"},
		{name: "config listen, wildcard", config: "listen: 0.0.0.0:7400\nallowRemote: true\n", wantAddr: "127.0.0.1:7400"},
		{name: "config addr wins over listen", config: "listen: 127.0.0.1:7400\naddr: 127.0.0.2:7401\n", wantAddr: "127.0.0.2:7401"},
		{name: "AGENTBRIDGE_ADDR wins over config", env: []string{"AGENTBRIDGE_ADDR=[::]:7402"}, config: "listen: 127.0.0.1:7400\n", wantAddr: "[::1]:7402"},
		{name: "--addr wins", flag: "127.0.0.3:7403", env: []string{"AGENTBRIDGE_ADDR=127.0.0.1:7402"}, wantAddr: "127.0.0.3:7403"},
		{name: "token file under XDG_STATE_HOME", stateFile: true, wantAddr: "127.0.0.1:7391", wantToken: fileToken},
		{name: "token file under ~/.local/state", homeFile: true, wantAddr: "127.0.0.1:7391", wantToken: fileToken},
		{name: "AGENTBRIDGE_TOKEN wins over the file", env: []string{"AGENTBRIDGE_TOKEN=" + envToken}, stateFile: true, wantAddr: "127.0.0.1:7391", wantToken: envToken},
		{name: "token from config", config: "token: " + envToken + "\n", wantAddr: "127.0.0.1:7391", wantToken: envToken},
		{name: "auth none", config: "auth: none\n", stateFile: true, wantAddr: "127.0.0.1:7391"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			env := append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config")}, tt.env...)
			if !tt.homeFile {
				env = append(env, "XDG_STATE_HOME="+filepath.Join(home, "state"))
			}
			if tt.config != "" {
				write(t, filepath.Join(home, "config", "agentbridge", "config.yaml"), tt.config)
			}
			if tt.stateFile {
				write(t, filepath.Join(home, "state", "agentbridge", "token"), fileToken+"\n")
			}
			if tt.homeFile {
				write(t, filepath.Join(home, ".local", "state", "agentbridge", "token"), fileToken+"\n")
			}
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			fs.String("addr", "", "")
			if tt.flag != "" {
				fs.Set("addr", tt.flag)
			}
			c, err := client.Discover(fs, env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Addr != tt.wantAddr || c.Token != tt.wantToken {
				t.Errorf("Discover = %s %q, want %s %q", c.Addr, c.Token, tt.wantAddr, tt.wantToken)
			}
		})
	}
}

func TestDiscoverErrors(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state")}
	write(t, filepath.Join(home, "state", "agentbridge", "token"), "file-token-0123456789abcdef\n")
	os.Chmod(filepath.Join(home, "state", "agentbridge", "token"), 0o644)
	if _, err := client.Discover(nil, env); err == nil || contains(err.Error(), "0123456789") || !contains(err.Error(), "others must not read it") {
		t.Errorf("a token file others can read: err = %v", err)
	}
	if _, err := client.Discover(nil, append(env, "AGENTBRIDGE_ADDR=127.0.0.1:0")); err == nil || !contains(err.Error(), "no port to dial") {
		t.Errorf("port 0: err = %v", err)
	}
}

func TestDialAddr(t *testing.T) {
	tests := []struct {
		listen, want string
		wantErr      bool
	}{
		{"127.0.0.1:7391", "127.0.0.1:7391", false},
		{"localhost:8000", "localhost:8000", false},
		{":7391", "127.0.0.1:7391", false},
		{"0.0.0.0:7391", "127.0.0.1:7391", false},
		{"[::]:7391", "[::1]:7391", false},
		{"[::1]:7391", "[::1]:7391", false},
		{"127.0.0.1:0", "", true},
		{"127.0.0.1", "", true},
		{"127.0.0.1:http", "", true},
	}
	for _, tt := range tests {
		got, err := client.DialAddr(tt.listen)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("client.DialAddr(%q) = %q, %v; want %q, error %v", tt.listen, got, err, tt.want, tt.wantErr)
		}
	}
}
