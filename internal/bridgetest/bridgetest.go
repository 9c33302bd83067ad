// Package bridgetest starts bridges for tests: a real hub, stream and API
// in-process on a loopback port (Start), the serve command run in-process
// (Serve), or a bridge process (Exec); each gives a client.Client of it.
// Everything listens on 127.0.0.1 only and is stopped when the test ends.
package bridgetest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/testlog"
	"github.com/agentbridge/agentbridge/sse"
)

// Token is the bearer token of a bridge made by Start unless Options say
// another.
const Token = "bridgetest-token-0123456789abcdef"

// PushSource is the push source a bridge made by Start has when Options
// name no source at all: id "test-push", harnesses "test-agent" and
// "other-agent".
var PushSource = agentbridge.SourceInfo{ID: "test-push", DisplayName: "Test Push", EnvironmentVariables: []string{},
	Harnesses: []agentbridge.Harness{{ID: "test-agent", DisplayName: "Test Agent"}, {ID: "other-agent", DisplayName: "Other Agent"}}}

// Options configure Start.
type Options struct {
	Push    []agentbridge.SourceInfo // push sources
	Sources []hub.Source             // running sources
	Hub     hub.Options              // Registry is set by Start; Logger defaults to discarding
	SSE     sse.Options              // Logger defaults to discarding
	Token   string                   // "" for Token; "-" for no authentication
	// Listener, when set, wraps the listener (to shrink socket buffers).
	Listener func(net.Listener) net.Listener
	// Answer turns answering on (api.Server.Answers).
	Answer bool
	// History is the bridge's history (api.Server.History); nil: off.
	History api.History
}

// Bridge is a hub, its stream and its API served on a loopback port.
type Bridge struct {
	Hub      *hub.Hub
	Registry *prometheus.Registry
	Addr     string // host:port
	URL      string // http://host:port
	Token    string // "" without authentication
	srv      *httptest.Server
}

// Start runs a bridge until the test ends.
func Start(t testing.TB, o Options) *Bridge {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	if o.Hub.Logger == nil {
		o.Hub.Logger = quiet
	}
	if o.SSE.Logger == nil {
		o.SSE.Logger = quiet
	}
	if len(o.Push) == 0 && len(o.Sources) == 0 {
		o.Push = []agentbridge.SourceInfo{PushSource}
	}
	reg := prometheus.NewRegistry()
	o.Hub.Registry = reg
	h := hub.New(o.Hub)
	for _, p := range o.Push {
		if err := h.AddPush(p); err != nil {
			t.Fatalf("push source %s: %v", p.ID, err)
		}
	}
	for _, s := range o.Sources {
		if err := h.Add(s); err != nil {
			t.Fatalf("add source: %v", err)
		}
	}
	token := o.Token
	switch token {
	case "":
		token = Token
	case "-":
		token = ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = h.Run(ctx) }()
	ts := httptest.NewUnstartedServer(nil)
	if o.Listener != nil {
		ts.Listener = o.Listener(ts.Listener)
	}
	ts.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	ts.Config.ErrorLog = slog.NewLogLogger(quiet.Handler(), slog.LevelDebug)
	b := &Bridge{Hub: h, Registry: reg, Addr: ts.Listener.Addr().String(), Token: token, srv: ts}
	b.URL = "http://" + b.Addr
	s := &api.Server{Hub: h, Events: sse.New(h, o.SSE), Addr: b.Addr, Token: token, Gatherer: reg, OpenAPI: []byte("openapi: 3.0.3\n")}
	if o.Answer {
		s.Answers = answer.New()
	}
	if o.History != nil {
		s.History = o.History
	}
	ts.Config.Handler = s.Handler()
	ts.Start()
	t.Cleanup(func() { cancel(); ts.CloseClientConnections(); ts.Close(); <-hubDone })
	return b
}

// Client returns a client of the bridge.
func (b *Bridge) Client() *client.Client { return client.New(b.Addr, b.Token) }

// Publish applies ops to the push source id, failing the test on error.
func (b *Bridge) Publish(t testing.TB, id string, ops ...agentbridge.Op) {
	t.Helper()
	if err := b.Hub.Publish(id, ops); err != nil {
		var ie *hub.InvalidError
		if errors.As(err, &ie) {
			t.Fatalf("publish to %s: %v: %+v", id, err, ie.Issues)
		}
		t.Fatalf("publish to %s: %v", id, err)
	}
}

// DropStreams closes every open connection (the streams' too), as a
// network failure would.
func (b *Bridge) DropStreams() { b.srv.CloseClientConnections() }

// The lines in which serve says where it serves: to a terminal the
// dashboard URL with its token, to anything else (a test's pipe) only the
// address, the token being in the token file.
const (
	DashboardPrefix = "agentbridge: dashboard at "
	ServingPrefix   = "agentbridge: serving at "
)

// Dashboard is where a bridge said it serves.
type Dashboard struct {
	Line  string   // the line it printed
	URL   *url.URL // the URL printed, with ?token= when it printed one
	Addr  string   // host:port
	Token string   // the token printed; "" when it printed none
}

// Client returns a client of the bridge that presents the printed token.
func (d Dashboard) Client() *client.Client { return client.New(d.Addr, d.Token) }

// ErrNoDashboard is returned by WaitDashboard when the output ended first.
var ErrNoDashboard = errors.New("the bridge printed no address")

// WaitDashboard reads a bridge's stdout until it says where it serves,
// then discards the rest in the background (so that the bridge never
// blocks on a full pipe).
func WaitDashboard(stdout io.Reader) (Dashboard, error) {
	br := bufio.NewReader(stdout)
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		raw, ok := strings.CutPrefix(line, DashboardPrefix)
		if !ok {
			raw, ok = strings.CutPrefix(line, ServingPrefix)
			raw, _, _ = strings.Cut(raw, " ")
		}
		if ok {
			go io.Copy(io.Discard, br)
			u, perr := url.Parse(raw)
			if perr != nil || u.Host == "" {
				return Dashboard{}, ErrNoDashboard
			}
			return Dashboard{Line: line, URL: u, Addr: u.Host, Token: u.Query().Get("token")}, nil
		}
		if err != nil {
			return Dashboard{}, ErrNoDashboard
		}
	}
}

// LogBuffer is a goroutine-safe buffer for a bridge's output.
type LogBuffer = testlog.Buffer

// FreeAddr returns a loopback address where nothing listens (for a bridge
// to start on, or for a client to find nothing at).
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
