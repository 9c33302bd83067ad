package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/sources"
)

// clientFlags are the flags every client subcommand shares: where the
// bridge is and which config file says so.
func clientFlags(fs *pflag.FlagSet) {
	fs.String("addr", "", "bridge `host:port` (default $AGENTBRIDGE_ADDR, else the configured listen address)")
	fs.String("config", "", "YAML config `file` (default $XDG_CONFIG_HOME/agentbridge/config.yaml when present)")
}

// filterFlags are the session filters of GET /v1/sessions and /v1/events.
type filterFlags struct {
	sources, harnesses, statuses []string
	project                      string
	ancestorPID                  int
}

func (f *filterFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.sources, "source", nil, "only these source `ids` (comma list, repeatable)")
	fs.StringSliceVar(&f.harnesses, "harness", nil, "only these harness `ids` (comma list, repeatable)")
	fs.StringSliceVar(&f.statuses, "status", nil, "only these `statuses`: idle, running, waiting, blocked, done, exited")
	fs.StringVar(&f.project, "project", "", "only sessions in this project `dir` (at or below it, or in a linked Git worktree of it)")
	fs.IntVar(&f.ancestorPID, "ancestor-pid", 0, "only sessions whose process descends from `pid`")
}

// complete registers the filters' value completions on cmd.
func (f *filterFlags) complete(cmd *cobra.Command) {
	mustComplete(cmd, "status", fixedCompletions("idle", "running", "waiting", "blocked", "done", "exited"))
	mustComplete(cmd, "source", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var ids []string
		for _, r := range sources.Registered() {
			ids = append(ids, r.Info.ID)
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	})
	mustComplete(cmd, "project", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
}

// query adds the filters to q. A relative --project is taken from the
// working directory, as a user typing "--project ." means.
func (f *filterFlags) query(q url.Values) error {
	if len(f.sources) > 0 {
		q.Set("source", strings.Join(f.sources, ","))
	}
	if len(f.harnesses) > 0 {
		q.Set("harness", strings.Join(f.harnesses, ","))
	}
	if len(f.statuses) > 0 {
		q.Set("status", strings.Join(f.statuses, ","))
	}
	if f.project != "" {
		p, err := filepath.Abs(f.project)
		if err != nil {
			return fmt.Errorf("--project: %w", err)
		}
		q.Set("project", p)
	}
	if f.ancestorPID < 0 {
		return usagef("--ancestor-pid: %d is not a process id", f.ancestorPID)
	}
	if f.ancestorPID > 0 {
		q.Set("ancestorPid", strconv.Itoa(f.ancestorPID))
	}
	return nil
}

// client talks to a running bridge.
type client struct {
	addr  string // host:port, as shown in errors
	base  string // "http://host:port"
	token string // "" when none was found
	http  *http.Client
	// stateDir is the bridge's state directory ("" when it cannot be named).
	stateDir string
}

// newClient finds the bridge and its token the way the server does: the
// address from --addr, else AGENTBRIDGE_ADDR, else the configured listen
// address; the token from AGENTBRIDGE_TOKEN or config, else the token file.
// A token file that does not exist yet is not an error here: the bridge may
// run with auth none, and a 401 answer says what to do.
//
// When no layer names an address (no --addr, AGENTBRIDGE_ADDR, addr or
// listen setting), a running demo is found through the address it records
// in the state directory (see demoAddrFile).
func newClient(fs *pflag.FlagSet, env []string) (*client, error) {
	cfg, err := config.Load(fs, env)
	if err != nil {
		return nil, err
	}
	target := cfg.ClientAddr()
	if cfg.Addr == "" && cfg.Listen == config.DefaultListen {
		if demo, ok := runningDemo(cfg.StateDir); ok {
			target = demo
		}
	}
	addr, err := dialAddr(target)
	if err != nil {
		return nil, err
	}
	token, err := config.Token(cfg)
	if err != nil && !errors.Is(err, config.ErrNoToken) {
		return nil, err
	}
	return &client{
		addr:     addr,
		base:     "http://" + addr,
		token:    token,
		http:     &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}},
		stateDir: cfg.StateDir,
	}, nil
}

// dialAddr turns a listen address into one a client can dial: a wildcard
// host (":7391", "0.0.0.0:7391", "[::]:7391") becomes the loopback of its
// family. Port 0 cannot be dialled.
func dialAddr(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("bridge address %q is not host:port", listen)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", fmt.Errorf("bridge address %q has no port to dial; pass --addr host:port", listen)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port), nil
}

// errNotRunning is what a refused connection means to a user.
func (c *client) errNotRunning() error {
	return fmt.Errorf("no agentbridge at %s: start it with `agentbridge serve`", c.addr)
}

// do sends a request and returns the response when its status is 2xx; any
// other answer becomes an error that says what went wrong.
func (c *client) do(ctx context.Context, method, path string, q url.Values, body io.Reader, accept string) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", path, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if isRefused(err) {
			return nil, c.errNotRunning()
		}
		return nil, fmt.Errorf("agentbridge at %s: %w", c.addr, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, c.statusError(resp)
}

// getJSON decodes the JSON answer of a GET into v.
func (c *client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := c.do(ctx, http.MethodGet, path, q, nil, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("agentbridge at %s: bad answer to %s: %w", c.addr, path, err)
	}
	return nil
}

// httpError is a non-2xx answer. Retryable says whether asking again later
// may succeed (the bridge is starting or overloaded).
type httpError struct {
	Status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// retryable reports whether the same request may succeed later.
func (e *httpError) retryable() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// problem is the RFC 9457 body of an error answer.
type problem struct {
	Title  string `json:"title"`
	Detail string `json:"detail"`
	Issues []struct {
		Path    string `json:"path"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"issues"`
}

// statusError explains a non-2xx answer, using its problem body when there
// is one.
func (c *client) statusError(resp *http.Response) error {
	var p problem
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/problem+json" || mt == "application/json" {
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&p)
	}
	msg := strings.TrimSpace(p.Title)
	if p.Detail != "" {
		if msg != "" {
			msg += ": "
		}
		msg += p.Detail
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	for _, is := range p.Issues {
		msg += fmt.Sprintf("\n  %s %s: %s", is.Path, is.Code, is.Message)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		if c.token == "" {
			msg = "the bridge wants a token and none was found: set AGENTBRIDGE_TOKEN, or run the client as the user who runs the bridge (it reads the bridge's token file)"
		} else {
			msg = "the bridge refused the token: it differs from the bridge's (check AGENTBRIDGE_TOKEN and the token file)"
		}
	}
	return &httpError{Status: resp.StatusCode, msg: fmt.Sprintf("agentbridge at %s: %d %s", c.addr, resp.StatusCode, msg)}
}

// isRefused reports whether err means nothing listens at the address.
func isRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}
