// Package client talks to a running agentbridge at a given address (New).
// It fetches the snapshot (GET /v1/sessions), follows the stream (GET
// /v1/events, as SSE or JSON lines) across drops and restarts of the
// bridge, resuming after the last event it delivered so that no event is
// lost or delivered twice (Follow), and folds the stream into the very list
// of sessions GET /v1/sessions returns at the same revision (State).
//
// It is what `agentbridge watch`, the soak and bench tools and the tests
// that read the stream use; a program that embeds the bridge can use it as
// well. It depends on the root package's wire vocabulary and the standard
// library only (see TestDependencies): where the bridge is and its token are
// the configuration's business (package config: Load, then Config.Client).
package client

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
	"strconv"
	"strings"
	"syscall"

	"github.com/agentbridge/agentbridge"
)

// Client is a bridge at one address. Its fields may be changed between
// calls (a test that restarts the bridge on a new port does), not during
// them.
type Client struct {
	// Addr is the bridge's host:port, as dialled and as shown in errors.
	Addr string
	// Token is presented as "Authorization: Bearer"; "" sends none.
	Token string
	// HTTP sends the requests. New sets one that uses no proxy and asks for
	// no compression (the stream must not be buffered by either); nil is
	// http.DefaultClient.
	HTTP *http.Client
}

// transport is shared by the clients New makes, so that their idle
// connections are pooled.
var transport = &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 8}

// New returns a client of the bridge at addr (host:port) that presents
// token ("" for none).
func New(addr, token string) *Client {
	return &Client{Addr: addr, Token: token, HTTP: &http.Client{Transport: transport}}
}

// DialAddr turns a listen address into one a client can dial: a wildcard
// host (":7391", "0.0.0.0:7391", "[::]:7391") becomes the loopback of its
// family. Port 0 cannot be dialled.
func DialAddr(listen string) (string, error) {
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

// ErrNotRunning is (wrapped in) the error of a request that found nothing
// listening at the address.
var ErrNotRunning = errors.New("agentbridge is not running")

type notRunning struct{ addr string }

func (e notRunning) Error() string {
	return fmt.Sprintf("no agentbridge at %s: start it with `agentbridge serve`", e.addr)
}
func (notRunning) Unwrap() error { return ErrNotRunning }

// Do sends a request to path (with query q, and body as JSON when not nil)
// and returns the response when its status is 2xx; the caller closes its
// body. Any other answer is a *StatusError that says what went wrong.
func (c *Client) Do(ctx context.Context, method, path string, q url.Values, body io.Reader, accept string) (*http.Response, error) {
	u := "http://" + c.Addr + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", path, err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, notRunning{c.Addr}
		}
		return nil, fmt.Errorf("agentbridge at %s: %w", c.Addr, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, c.statusError(resp)
}

// GetJSON decodes the JSON answer of GET path into v.
func (c *Client) GetJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := c.Do(ctx, http.MethodGet, path, q, nil, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("agentbridge at %s: bad answer to %s: %w", c.Addr, path, err)
	}
	return nil
}

// SessionList is the body of GET /v1/sessions: the revision it shows and
// the sessions, sorted by source then id.
type SessionList struct {
	Revision uint64              `json:"revision"`
	Sessions []agentbridge.Entry `json:"sessions"`
}

// Sessions fetches GET /v1/sessions with the filters in q (nil for none).
func (c *Client) Sessions(ctx context.Context, q url.Values) (SessionList, error) {
	var l SessionList
	err := c.GetJSON(ctx, "/v1/sessions", q, &l)
	if l.Sessions == nil {
		l.Sessions = []agentbridge.Entry{}
	}
	return l, err
}

// StatusError is a non-2xx answer.
type StatusError struct {
	Status int // the HTTP status
	msg    string
}

// Error says what the bridge answered; it never shows the token.
func (e *StatusError) Error() string { return e.msg }

// Retryable reports whether the same request may succeed later (the
// bridge is starting or overloaded).
func (e *StatusError) Retryable() bool {
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
// is one. It never shows the token.
func (c *Client) statusError(resp *http.Response) error {
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
		if c.Token == "" {
			msg = "the bridge wants a token and none was found: set AGENTBRIDGE_TOKEN, or run the client as the user who runs the bridge (it reads the bridge's token file)"
		} else {
			msg = "the bridge refused the token: it differs from the bridge's (check AGENTBRIDGE_TOKEN and the token file)"
		}
	}
	return &StatusError{Status: resp.StatusCode, msg: fmt.Sprintf("agentbridge at %s: %d %s", c.Addr, resp.StatusCode, msg)}
}
