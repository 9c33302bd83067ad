package api_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/history"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
	"github.com/agentbridge/agentbridge/internal/testlog"
)

const accessToken = "access-token-6f1c0e0b9d8a7c6b5a4f3e2d1c0b"

// countingHub answers like a bridge with one session and counts every call
// that reached it, so a test can tell that a refused request did nothing.
type countingHub struct {
	mu    sync.Mutex
	calls int
	muts  int // state-changing calls
}

func (h *countingHub) hit(mut bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if mut {
		h.muts++
	}
}

func (h *countingHub) counts() (calls, muts int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls, h.muts
}

var theSource = agentbridge.SourceState{
	SourceInfo: agentbridge.SourceInfo{ID: "example-push", DisplayName: "Example", EnvironmentVariables: []string{}, Push: true},
	Harnesses:  []agentbridge.HarnessState{{Harness: agentbridge.Harness{ID: "example-agent", DisplayName: "Example"}, Enabled: true}},
}

var theEntry = agentbridge.Entry{Source: "example-push", Snapshot: agentbridge.Snapshot{ID: "s-1", Harness: "example-agent", Status: agentbridge.StatusIdle}}

func (h *countingHub) Sources() []agentbridge.SourceState {
	h.hit(false)
	return []agentbridge.SourceState{theSource}
}
func (h *countingHub) SetHarness(source, harness string, enabled bool) (agentbridge.SourceState, error) {
	h.hit(true)
	return theSource, nil
}
func (h *countingHub) Sessions(agentbridge.Filter) (uint64, []agentbridge.Entry) {
	h.hit(false)
	return 1700000000000000, []agentbridge.Entry{theEntry}
}
func (h *countingHub) Session(source, id string) (agentbridge.Entry, bool) {
	h.hit(false)
	return theEntry, true
}
func (h *countingHub) SessionOn(host, source, id string) (agentbridge.Entry, bool) {
	return h.Session(source, id)
}
func (h *countingHub) Diagnostics() []agentbridge.DiagnosticEntry { h.hit(false); return nil }
func (h *countingHub) Publish(string, []agentbridge.Op) error     { h.hit(true); return nil }
func (h *countingHub) Revision() uint64                           { h.hit(false); return 1700000000000000 }

// netFixture is a Server with the token on, over a real listener.
type netFixture struct {
	url  string // http://127.0.0.1:port
	host string // 127.0.0.1:port
	port string
	hub  *countingHub
	logs *testlog.Buffer
	evs  *int
	mu   sync.Mutex
}

func newNetFixture(t *testing.T, mutate func(*api.Server)) *netFixture {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	f := &netFixture{host: ts.Listener.Addr().String(), hub: &countingHub{}, logs: &testlog.Buffer{}, evs: new(int)}
	_, f.port, _ = net.SplitHostPort(f.host)
	f.url = "http://" + f.host
	s := &api.Server{
		Hub: f.hub, Addr: f.host, Token: accessToken, OpenAPI: []byte("openapi: 3.0.3\n"),
		Events: api.EventsFunc(func(w http.ResponseWriter, r *http.Request, _ agentbridge.Filter) {
			f.mu.Lock()
			*f.evs++
			f.mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "retry: 3000\n\n")
		}),
		Logger:  slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		History: bridgetest.NewHistory(nil, agentbridge.UsageTable{}, history.PruneResult{}),
	}
	if mutate != nil {
		mutate(s)
	}
	ts.Config.Handler = s.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	return f
}

func (f *netFixture) streams() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.evs
}

// apiRoute is one route of docs/contract.md section 3 with a body that would be
// accepted.
type apiRoute struct {
	method, path, body string
}

var v1Routes = []apiRoute{
	{"GET", "/v1/sources", ""},
	{"GET", "/v1/sessions", ""},
	{"GET", "/v1/sessions/example-push/s-1", ""},
	{"GET", "/v1/diagnostics", ""},
	{"GET", "/v1/events", ""},
	{"GET", "/v1/events?format=ndjson", ""},
	{"GET", "/metrics", ""},
	{"POST", "/v1/sources/example-push/harnesses/example-agent", `{"enabled":false}`},
	{"POST", "/v1/sources/example-push/publish", `{"op":"remove","sessionId":"s-1"}`},
	{"POST", "/v1/validate/snapshot", `{"id":"s-1","harness":"example-agent","status":"idle"}`},
	{"POST", "/v1/validate/reset", `{"sessions":[]}`},
	{"POST", "/v1/validate/diagnostic", `{"code":"x","message":"y"}`},
	{"POST", "/v1/validate/event", `{"kind":"session.started","at":1700000000000}`},
	{"GET", "/v1/history", ""},
	{"GET", "/v1/history?format=csv", ""},
	{"GET", "/v1/usage?by=day", ""},
	{"POST", "/v1/history/prune", `{"olderThan":"90d"}`},
}

var postRoutes = func() []apiRoute {
	var out []apiRoute
	for _, r := range v1Routes {
		if r.method == "POST" {
			out = append(out, r)
		}
	}
	return out
}()

// send issues one request; headers with an empty value are left out, and
// "Host" sets the Host header.
func (f *netFixture) send(t *testing.T, r apiRoute, headers map[string]string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, f.url+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	c := &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func okHeaders(extra map[string]string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + accessToken, "Content-Type": "application/json"}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// wantProblem checks status and problem type slug, and that nothing reached
// the hub or the stream.
func (f *netFixture) wantRefused(t *testing.T, r apiRoute, h map[string]string, status int, slug string) {
	t.Helper()
	calls0, _ := f.hub.counts()
	ev0 := f.streams()
	resp, body := f.send(t, r, h)
	if resp.StatusCode != status {
		t.Errorf("%s %s with %v: status %d, want %d (%s)", r.method, r.path, h, resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s %s: Content-Type %q, want application/problem+json", r.method, r.path, ct)
	}
	if !strings.Contains(body, `"type":"`+api.ProblemTypePrefix+slug+`"`) {
		t.Errorf("%s %s: body %s, want problem type %s", r.method, r.path, body, slug)
	}
	if strings.Contains(body, accessToken) {
		t.Errorf("%s %s: the problem reveals the token", r.method, r.path)
	}
	if calls, _ := f.hub.counts(); calls != calls0 || f.streams() != ev0 {
		t.Errorf("%s %s was refused but reached the hub or the stream", r.method, r.path)
	}
	for k := range resp.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("%s %s: refusal carries %s", r.method, r.path, k)
		}
	}
}

func TestEveryRouteAcceptsTheToken(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	for _, r := range v1Routes {
		resp, body := f.send(t, r, okHeaders(nil))
		if resp.StatusCode != 200 {
			t.Errorf("%s %s with the token: %d, want 200 (%s)", r.method, r.path, resp.StatusCode, body)
		}
	}
}

func TestEveryRouteNeedsTheToken(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	auths := []struct{ name, header, cookie string }{
		{"missing", "", ""},
		{"empty bearer", "Bearer ", ""},
		{"wrong token", "Bearer wrong-token-0123456789abcdef0123456789", ""},
		{"token prefix", "Bearer " + accessToken[:len(accessToken)-1], ""},
		{"token with suffix", "Bearer " + accessToken + "x", ""},
		{"token in another case", "Bearer " + strings.ToUpper(accessToken), ""},
		{"basic scheme", "Basic " + accessToken, ""},
		{"no scheme", accessToken, ""},
		{"wrong cookie", "", api.CookieName("0") + "=" + accessToken}, // another bridge's cookie name
		{"cookie with a wrong value", "", "COOKIE=wrong"},
	}
	for _, r := range v1Routes {
		for _, a := range auths {
			h := map[string]string{"Content-Type": "application/json", "Authorization": a.header}
			if a.cookie != "" {
				h["Cookie"] = strings.Replace(a.cookie, "COOKIE", api.CookieName(f.port), 1)
			}
			t.Run(a.name+" "+r.method+" "+r.path, func(t *testing.T) {
				f.wantRefused(t, r, h, 401, "unauthorized")
			})
		}
	}
	// The token is accepted as a query parameter nowhere but on the dashboard.
	for _, r := range v1Routes {
		q := "?"
		if strings.Contains(r.path, "?") {
			q = "&"
		}
		rr := r
		rr.path += q + "token=" + url.QueryEscape(accessToken)
		f.wantRefused(t, rr, map[string]string{"Content-Type": "application/json"}, 401, "unauthorized")
	}
}

func TestRebindingHostsRefused(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	other := "1"
	if f.port == "1" {
		other = "2"
	}
	hosts := []string{
		"evil.example:" + f.port,
		"evil.example",
		"127.0.0.1:" + other,
		"localhost:" + other,
		"[::1]:" + other,
		"127.0.0.1",
		"localhost",
		"0.0.0.0:" + f.port,
		"192.168.1.20:" + f.port,
		"localhost.evil.example:" + f.port,
		"127.0.0.1.nip.io:" + f.port,
		"localhost.:" + f.port,
		"127.0.0.1:" + f.port + "@evil.example",
	}
	all := append([]apiRoute{{"GET", "/healthz", ""}, {"GET", "/", ""}, {"GET", "/openapi.yaml", ""}, {"GET", "/?token=" + accessToken, ""}}, v1Routes...)
	for _, r := range all {
		for _, h := range hosts {
			f.wantRefused(t, r, okHeaders(map[string]string{"Host": h}), 403, "forbidden-host")
		}
	}
	// An empty Host (HTTP/1.0 without one, HTTP/1.1 with an empty one).
	for _, r := range all {
		for _, text := range []string{
			fmt.Sprintf("%s %s HTTP/1.0\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", r.method, r.path, accessToken, len(r.body), r.body),
			fmt.Sprintf("%s %s HTTP/1.1\r\nHost: \r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", r.method, r.path, accessToken, len(r.body), r.body),
		} {
			c, err := net.DialTimeout("tcp", f.host, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, text)
			b, _ := io.ReadAll(c)
			c.Close()
			status, _, _ := strings.Cut(string(b), "\r\n")
			if !strings.Contains(status, " 403 ") && !strings.Contains(status, " 400 ") {
				t.Errorf("%s %s with an empty Host: %q, want 403 (or Go's own 400)", r.method, r.path, status)
			}
		}
	}
	if calls, _ := f.hub.counts(); calls != 0 || f.streams() != 0 {
		t.Errorf("requests with a foreign Host reached the hub %d times, the stream %d times", calls, f.streams())
	}
}

func TestCrossOriginStateChangesRefused(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	other := "1"
	if f.port == "1" {
		other = "2"
	}
	cases := []map[string]string{
		{"Origin": "https://evil.example"},
		{"Origin": "http://evil.example:" + f.port},
		{"Origin": "null"},
		{"Origin": "http://localhost:" + other},
		{"Origin": "http://127.0.0.1:" + other},
		{"Origin": "https://localhost:" + f.port},
		{"Origin": "http://127.0.0.1:" + f.port + "/path"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"}, // a lying fetch metadata does not help
	}
	for _, r := range postRoutes {
		for _, h := range cases {
			f.wantRefused(t, r, okHeaders(h), 403, "forbidden-origin")
		}
	}
	// Reads with a foreign Origin are refused too (cross-site EventSource).
	for _, r := range v1Routes {
		if r.method == "GET" {
			f.wantRefused(t, r, okHeaders(map[string]string{"Origin": "https://evil.example"}), 403, "forbidden-origin")
		}
	}
	if _, muts := f.hub.counts(); muts != 0 {
		t.Errorf("%d cross-origin state changes reached the hub", muts)
	}
}

func TestNonJSONBodiesRefused(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	for _, r := range postRoutes {
		for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "json", ""} {
			h := okHeaders(map[string]string{"Content-Type": ct})
			if ct == "" {
				delete(h, "Content-Type")
			}
			f.wantRefused(t, r, h, 415, "unsupported-media-type")
		}
	}
	if _, muts := f.hub.counts(); muts != 0 {
		t.Errorf("%d non-JSON bodies changed state", muts)
	}
}

func TestCookieFlow(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	for _, tc := range []struct{ path, loc string }{
		{"/?token=" + accessToken, "/"},
		{"/?view=compact&token=" + accessToken, "/?view=compact"},
		{"/index.html?token=" + accessToken + "&a=1", "/index.html?a=1"},
		{"/?token=" + accessToken + "&token=" + accessToken, "/"},
	} {
		resp, body := f.send(t, apiRoute{"GET", tc.path, ""}, nil)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("GET %s: %d, want 303 (%s)", tc.path, resp.StatusCode, body)
		}
		loc := resp.Header.Get("Location")
		if loc != tc.loc || strings.Contains(loc, accessToken) {
			t.Errorf("GET %s: Location %q, want %q (token stripped)", tc.path, loc, tc.loc)
		}
		if strings.Contains(body, accessToken) {
			t.Errorf("GET %s: the redirect body repeats the token", tc.path)
		}
		if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: Cache-Control %q, Referrer-Policy %q; want no-store, no-referrer", tc.path,
				resp.Header.Get("Cache-Control"), resp.Header.Get("Referrer-Policy"))
		}
		cs := resp.Cookies()
		if len(cs) != 1 {
			t.Fatalf("GET %s: cookies %v, want one", tc.path, cs)
		}
		c := cs[0]
		raw := resp.Header.Get("Set-Cookie")
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Name != api.CookieName(f.port) ||
			!strings.Contains(raw, "HttpOnly") || !strings.Contains(raw, "SameSite=Strict") || strings.Contains(strings.ToLower(raw), "domain=") {
			t.Errorf("GET %s: Set-Cookie %q: want HttpOnly, SameSite=Strict, Path=/, host-only, named %s", tc.path, raw, api.CookieName(f.port))
		}
		// The cookie works on every route, from the dashboard's own origin.
		for _, r := range v1Routes {
			h := map[string]string{"Cookie": c.Name + "=" + c.Value, "Content-Type": "application/json", "Origin": "http://127.0.0.1:" + f.port, "Sec-Fetch-Site": "same-origin"}
			if resp, body := f.send(t, r, h); resp.StatusCode != 200 {
				t.Errorf("%s %s with the cookie: %d (%s)", r.method, r.path, resp.StatusCode, body)
			}
		}
	}
	// A wrong or empty token sets no cookie.
	for _, p := range []string{"/?token=wrong", "/?token=", "/?token=" + accessToken[:8]} {
		resp, _ := f.send(t, apiRoute{"GET", p, ""}, nil)
		if resp.StatusCode != 401 || len(resp.Cookies()) != 0 {
			t.Errorf("GET %s: %d with cookies %v, want 401 and none", p, resp.StatusCode, resp.Cookies())
		}
	}
	// The token is never logged, not even at debug level.
	if strings.Contains(f.logs.String(), accessToken) {
		t.Errorf("the debug log carries the token:\n%s", f.logs)
	}
}

func TestNoCORSByDefault(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, nil)
	all := append([]apiRoute{{"GET", "/healthz", ""}, {"GET", "/", ""}, {"GET", "/openapi.yaml", ""}}, v1Routes...)
	for _, r := range all {
		for _, h := range []map[string]string{
			okHeaders(nil),
			okHeaders(map[string]string{"Origin": "http://127.0.0.1:" + f.port}),
			okHeaders(map[string]string{"Origin": "https://evil.example"}),
		} {
			resp, _ := f.send(t, r, h)
			for k := range resp.Header {
				if strings.HasPrefix(k, "Access-Control-") {
					t.Errorf("%s %s with %v: %s sent without configured origins", r.method, r.path, h, k)
				}
			}
		}
		// A preflight gets no grant either.
		resp, _ := f.send(t, apiRoute{"OPTIONS", r.path, ""}, map[string]string{
			"Origin": "https://evil.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"})
		if resp.StatusCode < 400 {
			t.Errorf("preflight of %s: %d, want a 4xx", r.path, resp.StatusCode)
		}
		for k := range resp.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("preflight of %s: %s sent without configured origins", r.path, k)
			}
		}
	}
}

// TestConstantTimeToken checks the source: the token is compared
// with subtle.ConstantTimeCompare, and nowhere with == or != (a timing
// oracle).
func TestConstantTimeToken(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	constant := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		{
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ConstantTimeCompare" {
						for _, a := range n.Args {
							if strings.Contains(exprString(a), "Token") {
								constant++
							}
						}
					}
				case *ast.BinaryExpr:
					if n.Op != token.EQL && n.Op != token.NEQ {
						return true
					}
					for _, side := range []ast.Expr{n.X, n.Y} {
						if s := exprString(side); strings.HasSuffix(s, ".Token") {
							other := n.Y
							if side == n.Y {
								other = n.X
							}
							if lit, ok := other.(*ast.BasicLit); ok && lit.Value == `""` {
								continue // "is auth on" is not a comparison of secrets
							}
							t.Errorf("%s: the token is compared with %s", fset.Position(n.Pos()), n.Op)
						}
					}
				}
				return true
			})
		}
	}
	if constant == 0 {
		t.Errorf("no subtle.ConstantTimeCompare of the token found in package api")
	}
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.CallExpr:
		s := exprString(e.Fun) + "("
		for _, a := range e.Args {
			s += exprString(a) + ","
		}
		return s + ")"
	}
	return ""
}
