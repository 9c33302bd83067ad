package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/api"
)

// TestHostileCookieIsNotTheToken: the dashboard's cookie is a credential
// derived from the token, never the token itself; the token presented as a
// cookie is refused, the cookie presented as a bearer token is refused, and
// rotating the token revokes the cookie.
func TestHostileCookieIsNotTheToken(t *testing.T) {
	t.Parallel()
	f := newHardFixture(t, nil)
	resp, _ := f.send(t, hardRoute{"GET", "/?token=" + url.QueryEscape(hardToken), ""}, nil)
	cs := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cs) != 1 {
		t.Fatalf("GET /?token=: %d with cookies %v, want 303 and one cookie", resp.StatusCode, cs)
	}
	c := cs[0]
	if c.Value == hardToken || strings.Contains(c.Value, hardToken) || strings.Contains(resp.Header.Get("Set-Cookie"), hardToken) {
		t.Fatalf("the cookie carries the token: %q", resp.Header.Get("Set-Cookie"))
	}
	if c.Value != api.SessionCookie(hardToken) {
		t.Errorf("cookie %q, want SessionCookie(token)", c.Value)
	}
	route := hardRoute{"GET", "/v1/sources", ""}
	if resp, body := f.send(t, route, map[string]string{"Cookie": c.Name + "=" + c.Value}); resp.StatusCode != 200 {
		t.Fatalf("the cookie is refused: %d %s", resp.StatusCode, body)
	}
	f.wantRefused(t, route, map[string]string{"Cookie": c.Name + "=" + hardToken}, 401, "unauthorized")
	f.wantRefused(t, route, map[string]string{"Authorization": "Bearer " + c.Value}, 401, "unauthorized")

	// The same token gives the same cookie after a restart; another token
	// (rotated) does not accept it.
	again := newHardFixture(t, nil)
	if resp, body := again.send(t, route, map[string]string{"Cookie": api.CookieName(again.port) + "=" + c.Value}); resp.StatusCode != 200 {
		t.Errorf("the cookie is refused by a restarted bridge with the same token: %d %s", resp.StatusCode, body)
	}
	rotated := newHardFixture(t, func(s *api.Server) { s.Token = hardToken + "-rotated" })
	rotated.wantRefused(t, route, map[string]string{"Cookie": api.CookieName(rotated.port) + "=" + c.Value}, 401, "unauthorized")
	if api.SessionCookie("a") == api.SessionCookie("b") || api.SessionCookie(hardToken) == "" {
		t.Errorf("SessionCookie does not depend on the token")
	}
}

// TestHostileNoRedirectLeavesTheOrigin: trading the token for the cookie
// redirects to a path of the bridge itself, whatever the request path
// looks like, with auth on and off.
func TestHostileNoRedirectLeavesTheOrigin(t *testing.T) {
	t.Parallel()
	on := newHardFixture(t, nil)
	off := newHardFixture(t, func(s *api.Server) { s.Token = "" })
	for _, p := range []string{
		"//evil.com/", "//evil.com", "///evil.com/x", "/\\evil.com/", "/\\/evil.com", "/%5Cevil.com",
		"/%2F%2Fevil.com/", "/.//evil.com", "/a/..//evil.com", "//evil.com/%2e%2e", "/%09/evil.com", "//evil.com:80@x/",
	} {
		for _, f := range []*hardFixture{on, off} {
			resp, body := f.sendRaw(t, p+"?view=x&token="+url.QueryEscape(hardToken))
			if resp.StatusCode >= 300 && resp.StatusCode < 400 {
				loc := resp.Header.Get("Location")
				u, err := url.Parse(loc)
				if err != nil || u.Host != "" || u.Scheme != "" || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.Contains(loc, "\\") {
					t.Errorf("GET %s redirects to %q: off the bridge's origin", p, loc)
				}
				if strings.Contains(loc, hardToken) || strings.Contains(body, hardToken) {
					t.Errorf("GET %s: the redirect repeats the token", p)
				}
			}
		}
	}
}

// sendRaw sends GET with a request target exactly as given (no client
// cleaning), with the fixture's Host, over a fresh connection.
func (f *hardFixture) sendRaw(t *testing.T, target string) (*http.Response, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, f.host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}
