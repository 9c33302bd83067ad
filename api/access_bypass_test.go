package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/internal/testenv"
)

// TestCookieIsNotTheToken: the dashboard's cookie is a credential
// derived from the token, never the token itself; the token presented as a
// cookie is refused, the cookie presented as a bearer token is refused, and
// rotating the token revokes the cookie.
func TestCookieIsNotTheToken(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	resp, _ := f.send(t, apiRoute{"GET", "/?token=" + url.QueryEscape(accessToken), ""}, nil)
	cs := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cs) != 1 {
		t.Fatalf("GET /?token=: %d with cookies %v, want 303 and one cookie", resp.StatusCode, cs)
	}
	c := cs[0]
	if c.Value == accessToken || strings.Contains(c.Value, accessToken) || strings.Contains(resp.Header.Get("Set-Cookie"), accessToken) {
		t.Fatalf("the cookie carries the token: %q", resp.Header.Get("Set-Cookie"))
	}
	if c.Value != api.SessionCookie(accessToken) {
		t.Errorf("cookie %q, want SessionCookie(token)", c.Value)
	}
	route := apiRoute{"GET", "/v1/sources", ""}
	if resp, body := f.send(t, route, map[string]string{"Cookie": c.Name + "=" + c.Value}); resp.StatusCode != 200 {
		t.Fatalf("the cookie is refused: %d %s", resp.StatusCode, body)
	}
	f.wantRefused(t, route, map[string]string{"Cookie": c.Name + "=" + accessToken}, 401, "unauthorized")
	f.wantRefused(t, route, map[string]string{"Authorization": "Bearer " + c.Value}, 401, "unauthorized")

	// The same token gives the same cookie after a restart; another token
	// (rotated) does not accept it.
	again := newNetFixture(t, nil)
	if resp, body := again.send(t, route, map[string]string{"Cookie": api.CookieName(again.port) + "=" + c.Value}); resp.StatusCode != 200 {
		t.Errorf("the cookie is refused by a restarted bridge with the same token: %d %s", resp.StatusCode, body)
	}
	rotated := newNetFixture(t, func(s *api.Server) { s.Token = accessToken + "-rotated" })
	rotated.wantRefused(t, route, map[string]string{"Cookie": api.CookieName(rotated.port) + "=" + c.Value}, 401, "unauthorized")
	if api.SessionCookie("a") == api.SessionCookie("b") || api.SessionCookie(accessToken) == "" {
		t.Errorf("SessionCookie does not depend on the token")
	}
}

// TestNoRedirectLeavesTheOrigin: trading the token for the cookie
// redirects to a path of the bridge itself, whatever the request path
// looks like, with auth on and off.
func TestNoRedirectLeavesTheOrigin(t *testing.T) {
	t.Parallel()
	on := newNetFixture(t, nil)
	off := newNetFixture(t, func(s *api.Server) { s.Token = "" })
	for _, p := range []string{
		"//evil.com/", "//evil.com", "///evil.com/x", "/\\evil.com/", "/\\/evil.com", "/%5Cevil.com",
		"/%2F%2Fevil.com/", "/.//evil.com", "/a/..//evil.com", "//evil.com/%2e%2e", "/%09/evil.com", "//evil.com:80@x/",
	} {
		for _, f := range []*netFixture{on, off} {
			resp, body := f.sendRaw(t, p+"?view=x&token="+url.QueryEscape(accessToken))
			if resp.StatusCode >= 300 && resp.StatusCode < 400 {
				loc := resp.Header.Get("Location")
				u, err := url.Parse(loc)
				if err != nil || u.Host != "" || u.Scheme != "" || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.Contains(loc, "\\") {
					t.Errorf("GET %s redirects to %q: off the bridge's origin", p, loc)
				}
				if strings.Contains(loc, accessToken) || strings.Contains(body, accessToken) {
					t.Errorf("GET %s: the redirect repeats the token", p)
				}
			}
		}
	}
}

// sendRaw sends GET with a request target exactly as given (no client
// cleaning), with the fixture's Host, over a fresh connection.
func (f *netFixture) sendRaw(t *testing.T, target string) (*http.Response, string) {
	t.Helper()
	return f.rawRequest(t, target, f.host, "")
}

// rawRequest sends GET with the request target, Host and extra header
// lines exactly as given (no client normalises them) over a fresh
// connection, and returns the answer with its body (at most 1 MiB).
func (f *netFixture) rawRequest(t *testing.T, target, host, extra string) (*http.Response, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.host, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", target, host, extra)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s (Host %q): %v", target, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(b)
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		testenv.Missing(t, "no /proc/self/fd")
	}
	return len(ents)
}

// stalledPost sends the headers of a POST that declares a body and never
// sends it, and returns the connection.
func (f *netFixture) stalledPost(t *testing.T, auth bool) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.host, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h := ""
	if auth {
		h = "Authorization: Bearer " + accessToken + "\r\n"
	}
	fmt.Fprintf(c, "POST /v1/sources/example-push/publish HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"op\":", f.host, h)
	return c
}

// answeredAndClosed reads the answer on c and then the connection's end,
// both within limit; it returns the status.
func answeredAndClosed(t *testing.T, c net.Conn, limit time.Duration) int {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(limit))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Errorf("no answer within %v: %v", limit, err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("the connection was not closed after the answer (%v)", err)
	}
	return resp.StatusCode
}

// TestStalledBodies: a POST that declares a body and never sends it
// is answered at once when it is refused (no token) and its connection
// closed, instead of being held while the server waits to drain the body;
// with the token, the body's deadline answers 408. A hundred of them at
// once leave no descriptors behind, and the bridge keeps answering.
func TestStalledBodies(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, func(s *api.Server) { s.BodyTimeout = 500 * time.Millisecond })

	c := f.stalledPost(t, false)
	if st := answeredAndClosed(t, c, time.Minute); st != 401 {
		t.Errorf("unauthenticated stalled POST: %d, want 401", st)
	}
	c.Close()
	c = f.stalledPost(t, true)
	start := time.Now()
	if st := answeredAndClosed(t, c, time.Minute); st != http.StatusRequestTimeout {
		t.Errorf("authenticated stalled POST: %d, want 408", st)
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("answered 408 after %v, before the 500ms deadline", took)
	}
	c.Close()

	base := openFDs(t)
	conns := make([]net.Conn, 100)
	for i := range conns {
		conns[i] = f.stalledPost(t, false)
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st := answeredAndClosed(t, c, time.Minute); st != 401 {
				t.Errorf("stalled POST: %d, want 401", st)
			}
			c.Close()
		}()
	}
	wg.Wait()
	if resp, body := f.send(t, apiRoute{"GET", "/v1/sources", ""}, okHeaders(nil)); resp.StatusCode != 200 {
		t.Errorf("after 100 stalled POSTs: GET /v1/sources %d %s", resp.StatusCode, body)
	}
	deadline := time.Now().Add(time.Minute)
	for openFDs(t) > base+5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // the server closes its ends asynchronously
	}
	if n := openFDs(t); n > base+5 {
		t.Errorf("%d descriptors open after 100 stalled POSTs were answered, %d before", n, base)
	}
}

// TestBodyKeepsTheConnection: a body read to its end keeps the
// connection for the next request (the guard does not cost keep-alive).
func TestBodyKeepsTheConnection(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	c, err := net.DialTimeout("tcp", f.host, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	body := `{"id":"s-1","harness":"example-agent","status":"idle"}`
	for i := range 3 {
		fmt.Fprintf(c, "POST /v1/validate/snapshot HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", f.host, accessToken, len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on one connection: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("request %d: %d, close %v; want 200 and the connection kept", i, resp.StatusCode, resp.Close)
		}
	}
}

// TestCookieFromAnotherPortCannotSignOut: a page on another port of the
// same host can set a cookie of the dashboard's name (cookies ignore
// ports) with a longer path, which browsers send first. The dashboard
// stays signed in when any cookie of its name is valid; junk alone, or the
// token in a cookie, still signs nothing in.
func TestCookieFromAnotherPortCannotSignOut(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	name, good := api.CookieName(f.port), api.SessionCookie(accessToken)
	route := apiRoute{"GET", "/v1/sources", ""}
	for _, tc := range []struct {
		cookie string
		ok     bool
	}{
		{name + "=junk; " + name + "=" + good, true},
		{name + "=" + good + "; " + name + "=junk", true},
		{name + "=; " + name + "=" + good, true},
		{name + "=junk", false},
		{name + "=junk; " + name + "=" + accessToken, false},
		{"agentbridge_1=" + good, false}, // another port's name
	} {
		resp, body := f.send(t, route, map[string]string{"Cookie": tc.cookie})
		if tc.ok && resp.StatusCode != http.StatusOK || !tc.ok && resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Cookie %q: %d %s", tc.cookie, resp.StatusCode, body)
		}
	}
}

// rawGet sends a GET with the token, the Host and extra header lines
// exactly as given, and returns the status and body.
func (f *netFixture) rawGet(t *testing.T, target, host, extra string) (int, string) {
	t.Helper()
	resp, body := f.rawRequest(t, target, host, "Authorization: Bearer "+accessToken+"\r\n"+extra)
	return resp.StatusCode, body
}

// TestHostAndOriginSpellings: Host and Origin values in the spellings a
// rebinding page or a confused parser could use (numeric and shortened
// IPv4, IPv4-mapped IPv6, a port with a leading zero or twice, a trailing
// dot, userinfo, a path or a second origin after the port) are refused
// unless they name this bridge on loopback with its port; what is
// refused reaches nothing.
func TestHostAndOriginSpellings(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	p := f.port
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:" + p, true},
		{"LOCALHOST:" + p, true},
		{"[::1]:" + p, true},
		{"[::ffff:127.0.0.1]:" + p, true}, // loopback written as IPv6: still this machine
		{"127.1:" + p, false},
		{"0x7f.0.0.1:" + p, false},
		{"2130706433:" + p, false},
		{"0177.0.0.1:" + p, false},
		{"127.0.0.1:0" + p, false},
		{"127.0.0.1:" + p + ":" + p, false},
		{"127.0.0.1.:" + p, false},
		{"localhost.:" + p, false},
		{"[::ffff:7f00:1]:" + p + "0", false},
		{"evil.example:" + p, false},
		{"127.0.0.1:" + p + "@evil.example", false},
		{"evil.example@127.0.0.1:" + p, false},
		{"[fe80::1%25lo]:" + p, false},
	} {
		code, body := f.rawGet(t, "/v1/sources", tc.host, "")
		if tc.ok && code != http.StatusOK || !tc.ok && code != http.StatusForbidden && code != http.StatusBadRequest {
			t.Errorf("Host %q: %d %s", tc.host, code, body)
		}
	}
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"http://127.0.0.1:" + p, true},
		{"http://localhost:" + p, true},
		{"http://[::1]:" + p, true},
		{"http://127.0.0.1:" + p + "/", false},
		{"http://127.0.0.1:" + p + "@evil.example", false},
		{"http://evil.example#@127.0.0.1:" + p, false},
		{"http://127.0.0.1:" + p + ".evil.example", false},
		{"http://127.0.0.1:" + p + ", http://evil.example", false},
		{"http://evil.example, http://127.0.0.1:" + p, false},
		{"https://127.0.0.1:" + p, false},
		{"http://127.0.0.1", false},
		{"http://127.1:" + p, false},
		{"ws://127.0.0.1:" + p, false},
		{"file://", false},
		{"null", false},
		{"http://127.0.0.1:" + p + "/?x", false},
	} {
		code, body := f.rawGet(t, "/v1/sources", f.host, "Origin: "+tc.origin+"\r\n")
		if tc.ok && code != http.StatusOK || !tc.ok && code != http.StatusForbidden {
			t.Errorf("Origin %q: %d %s", tc.origin, code, body)
		}
	}
	if calls, _ := f.hub.counts(); calls == 0 {
		t.Error("the allowed requests reached nothing (the test would pass on a dead server)")
	}
}

// TestTokenInURLForms: the token in a URL in any form other than the
// dashboard's own ?token= (another case, in the path, repeated after a
// wrong one, on an API route or a missing page) signs nothing in, and no
// answer (body, Location, cookie) carries it.
func TestTokenInURLForms(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	tok := url.QueryEscape(accessToken)
	for _, tc := range []struct {
		target string
		cookie bool
	}{
		{"/?token=" + tok, true},
		{"/?a=1&token=" + tok + "&token=wrong", true},
		{"/?token=wrong&token=" + tok, false},
		{"/?TOKEN=" + tok, false},
		{"/?token%3D" + tok, false},
		{"/%3Ftoken%3D" + tok, false},
		{"/" + tok, false},
		{"/v1/sessions?token=" + tok, false},
		{"/v1/sessions/" + tok, false},
		{"/nothing?token=" + tok, true}, // the dashboard takes ?token= on any of its paths
		{"/v1/stream?token=" + tok + "&format=ndjson", false},
	} {
		resp, b := f.sendRaw(t, tc.target)
		if got := len(resp.Cookies()) > 0; got != tc.cookie {
			t.Errorf("GET %s: %d, cookie set %v, want %v", tc.target, resp.StatusCode, got, tc.cookie)
		}
		for what, s := range map[string]string{"body": b, "Location": resp.Header.Get("Location"), "Set-Cookie": resp.Header.Get("Set-Cookie")} {
			if strings.Contains(s, accessToken) {
				t.Errorf("GET %s: the %s carries the token", tc.target, what)
			}
		}
	}
	if strings.Contains(f.logs.String(), accessToken) {
		t.Errorf("the log carries the token:\n%s", f.logs.String())
	}
}
