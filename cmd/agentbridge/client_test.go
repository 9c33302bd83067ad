package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// fakeBridge is an httptest server that records the requests it gets and
// answers them with handler.
type fakeBridge struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newFakeBridge(t *testing.T, handler http.HandlerFunc) *fakeBridge {
	t.Helper()
	fb := &fakeBridge{}
	fb.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fb.mu.Lock()
		fb.reqs = append(fb.reqs, r.Clone(context.Background()))
		fb.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(fb.Close)
	return fb
}

// addr is the server's host:port.
func (fb *fakeBridge) addr() string { return strings.TrimPrefix(fb.URL, "http://") }

// requests returns the requests so far.
func (fb *fakeBridge) requests() []*http.Request {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return append([]*http.Request(nil), fb.reqs...)
}

// testEnv is a clean environment: a home of its own, no AGENTBRIDGE_*
// variables but those given.
func testEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	return append([]string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
	}, extra...)
}

func writeFile(t *testing.T, name, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// TestClientFindsBridgeAndToken checks each way of naming the address and
// the token, and which wins.
func TestClientFindsBridgeAndToken(t *testing.T) {
	const fileToken = "file-token-0123456789abcdef"
	const envToken = "env-token-0123456789abcdef"
	fb := newFakeBridge(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"revision":1,"sessions":[]}`))
	})
	dead := bridgetest.FreeAddr(t)
	tests := []struct {
		name      string
		args      []string
		env       []string
		config    string // config.yaml contents
		tokenFile bool
		wantAuth  string
	}{
		{name: "--addr", args: []string{"--addr", fb.addr()}},
		{name: "AGENTBRIDGE_ADDR", env: []string{"AGENTBRIDGE_ADDR=" + fb.addr()}},
		{name: "config listen", config: "listen: " + fb.addr() + "\n"},
		{name: "config addr wins over listen", config: "listen: " + dead + "\naddr: " + fb.addr() + "\n"},
		{name: "AGENTBRIDGE_ADDR wins over config", env: []string{"AGENTBRIDGE_ADDR=" + fb.addr()}, config: "listen: " + dead + "\n"},
		{name: "--addr wins over AGENTBRIDGE_ADDR", args: []string{"--addr", fb.addr()}, env: []string{"AGENTBRIDGE_ADDR=" + dead}},
		{name: "token file", args: []string{"--addr", fb.addr()}, tokenFile: true, wantAuth: "Bearer " + fileToken},
		{name: "AGENTBRIDGE_TOKEN wins over the file", args: []string{"--addr", fb.addr()}, env: []string{"AGENTBRIDGE_TOKEN=" + envToken}, tokenFile: true, wantAuth: "Bearer " + envToken},
		{name: "token from config", args: []string{"--addr", fb.addr()}, config: "token: " + envToken + "\n", wantAuth: "Bearer " + envToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t, tt.env...)
			home := envGet(env, "HOME")
			if tt.config != "" {
				writeFile(t, filepath.Join(home, "config", "agentbridge", "config.yaml"), tt.config, 0o600)
			}
			if tt.tokenFile {
				writeFile(t, filepath.Join(home, "state", "agentbridge", "token"), fileToken+"\n", 0o600)
			}
			before := len(fb.requests())
			var stdout, stderr bytes.Buffer
			args := append([]string{"--json"}, tt.args...)
			if err := sessionsMain(t.Context(), args, env, &stdout, &stderr); err != nil {
				t.Fatalf("sessions: %v (stderr %q)", err, stderr.String())
			}
			reqs := fb.requests()
			if len(reqs) != before+1 {
				t.Fatalf("the fake bridge got %d requests, want 1", len(reqs)-before)
			}
			if got := reqs[len(reqs)-1].Header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
		})
	}
}

func TestClientErrors(t *testing.T) {
	unauthorized := newFakeBridge(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"type":"about:blank","title":"Unauthorized","status":401}`))
	})
	badFilter := newFakeBridge(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"type":"about:blank","title":"Bad filter","status":400,"detail":"status \"sleeping\" is not a session status"}`))
	})
	garbage := newFakeBridge(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`<html>`))
	})
	dead := bridgetest.FreeAddr(t)
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"not running", []string{"--addr", dead}, nil,
			"no agentbridge at " + dead + ": start it with `agentbridge serve`"},
		{"no token", []string{"--addr", unauthorized.addr()}, nil,
			"401 the bridge wants a token and none was found: set AGENTBRIDGE_TOKEN"},
		{"wrong token", []string{"--addr", unauthorized.addr()}, []string{"AGENTBRIDGE_TOKEN=wrong-token-0123456789"},
			"401 the bridge refused the token"},
		{"problem", []string{"--addr", badFilter.addr(), "--status", "sleeping"}, nil,
			`400 Bad filter: status "sleeping" is not a session status`},
		{"not JSON", []string{"--addr", garbage.addr()}, nil, "bad answer to /v1/sessions"},
		{"port 0", []string{"--addr", "127.0.0.1:0"}, nil, "has no port to dial"},
		{"bad config", nil, []string{"AGENTBRIDGE_NOPE=1"}, "unknown environment variable AGENTBRIDGE_NOPE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := sessionsMain(t.Context(), tt.args, testEnv(t, tt.env...), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "0123456789") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

// TestNewClientDiscovers checks every place an address and a token come
// from, and which wins, as the client subcommands find them.
func TestNewClientDiscovers(t *testing.T) {
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
				writeFile(t, filepath.Join(home, "config", "agentbridge", "config.yaml"), tt.config, 0o600)
			}
			if tt.stateFile {
				writeFile(t, filepath.Join(home, "state", "agentbridge", "token"), fileToken+"\n", 0o600)
			}
			if tt.homeFile {
				writeFile(t, filepath.Join(home, ".local", "state", "agentbridge", "token"), fileToken+"\n", 0o600)
			}
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			clientFlags(fs)
			if tt.flag != "" {
				fs.Set("addr", tt.flag)
			}
			c, err := newClient(fs, env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Addr != tt.wantAddr || c.Token != tt.wantToken {
				t.Errorf("newClient = %s %q, want %s %q", c.Addr, c.Token, tt.wantAddr, tt.wantToken)
			}
		})
	}
}

func TestNewClientDiscoverErrors(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state")}
	writeFile(t, filepath.Join(home, "state", "agentbridge", "token"), "file-token-0123456789abcdef\n", 0o600)
	if err := os.Chmod(filepath.Join(home, "state", "agentbridge", "token"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newClient(nil, env); err == nil || strings.Contains(err.Error(), "0123456789") || !strings.Contains(err.Error(), "others must not read it") {
		t.Errorf("a token file others can read: err = %v", err)
	}
	if _, err := newClient(nil, append(env, "AGENTBRIDGE_ADDR=127.0.0.1:0")); err == nil || !strings.Contains(err.Error(), "no port to dial") {
		t.Errorf("port 0: err = %v", err)
	}
}

// TestRunReportsNotRunning checks what a user sees through the command
// dispatcher: one line and exit status 1.
func TestRunReportsNotRunning(t *testing.T) {
	dead := bridgetest.FreeAddr(t)
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"sessions", "--addr", dead}, &stdout, &stderr); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	want := "agentbridge sessions: no agentbridge at " + dead + ": start it with `agentbridge serve`\n"
	if stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
}
