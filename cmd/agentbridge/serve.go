package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/history"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/notify"
	"github.com/agentbridge/agentbridge/remote"
	"github.com/agentbridge/agentbridge/sources"
	_ "github.com/agentbridge/agentbridge/sources/all" // every built-in source
	"github.com/agentbridge/agentbridge/sse"
)

// Bounds of a clean shutdown. Streams end as soon as the base context is
// cancelled, so the grace only covers ordinary requests still running;
// whatever is left after it is closed.
const (
	shutdownGrace   = 1 * time.Second  // for in-flight requests to finish
	sourcesGrace    = 10 * time.Second // for the sources to stop
	readHeaderLimit = 10 * time.Second
)

func newServeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "serve the API, the event stream and the dashboard (the default)",
		Long: `Serve the REST API, the event stream and the dashboard until interrupted.

When stdout is a terminal, serve prints the dashboard's URL with its token
once; otherwise (a log, a pipe, a service) it prints only the address, and
"agentbridge open" opens the dashboard.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags(), a.env)
			if err != nil {
				return err
			}
			return a.serve(cmd.Context(), cfg, serveOptions{})
		},
	}
	config.RegisterFlags(cmd.Flags())
	return cmd
}

// buildSources makes every registered source the configuration leaves
// on (sources.<id>.enabled, default on), each watching its agent's home:
// sources.<id>.home (or its legacy alias), else the agent's own variable,
// else its default home. A home that cannot be named (no HOME) leaves the
// source out with a warning; an optional source (the reference example
// agent) runs only when its home is named.
func buildSources(cfg *config.Config, log *slog.Logger) []hub.Source {
	var out []hub.Source
	for _, r := range sources.Registered() {
		id := r.Info.ID
		if !cfg.SourceEnabled(id) {
			log.Info("source switched off by configuration", "source", id)
			continue
		}
		if r.HomeEnv != "" {
			if v := cfg.Getenv(r.HomeEnv); v != "" && !filepath.IsAbs(v) {
				log.Warn("the agent's home variable is not an absolute path; using the default home", "source", id, "variable", r.HomeEnv)
			}
		}
		home := r.ResolveHome(cfg.SourceHome(id), cfg.Getenv)
		if home == "" {
			if !r.Optional {
				log.Warn("source left out: its home directory is unknown (set HOME or the agent's variable)", "source", id)
			}
			continue
		}
		out = append(out, r.New(sources.Options{Home: home, Window: cfg.Window, Linger: cfg.Linger, Logger: log, Getenv: cfg.Getenv}))
	}
	return out
}

// checkSourceIDs refuses configuration for a source that is not built in.
func checkSourceIDs(cfg *config.Config) error {
	var known []string
	for _, r := range sources.Registered() {
		known = append(known, r.Info.ID)
	}
	for id := range cfg.Sources {
		if !slices.Contains(known, id) {
			return fmt.Errorf("sources.%s: no built-in source has this id (known: %s)", id, strings.Join(known, ", "))
		}
	}
	return nil
}

// pushInfo turns a configured push source into the hub's description.
func pushInfo(p config.PushSource) agentbridge.SourceInfo {
	info := agentbridge.SourceInfo{ID: p.ID, DisplayName: p.DisplayName, EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{}, Push: true}
	if info.DisplayName == "" {
		info.DisplayName = p.ID
	}
	for _, h := range p.Harnesses {
		name := h.DisplayName
		if name == "" {
			name = h.ID
		}
		info.Harnesses = append(info.Harnesses, agentbridge.Harness{ID: h.ID, DisplayName: name})
	}
	return info
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// serveOptions are what the demo changes in serve.
type serveOptions struct {
	// fallbackListen is listened on when cfg.Listen is taken ("" for none).
	fallbackListen string
	// listening is called with the address once it is known; the function
	// it returns is called when serving ends.
	listening func(addr string) (done func())
}

// serve runs the bridge until ctx ends, then shuts it down: open streams
// end (their context is ctx), in-flight requests get shutdownGrace, the
// sources sourcesGrace. When stdout is a terminal it prints the dashboard
// URL with the token once; otherwise only the address, so that the token
// does not end up in a log or a pipe. The token is never logged.
func (a *app) serve(parent context.Context, cfg *config.Config, opt serveOptions) error {
	stdout, stderr := a.stdout, a.stderr
	ctx, stop := context.WithCancel(parent)
	defer stop()
	if err := servable(goos); err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)
	if err := checkSourceIDs(cfg); err != nil {
		return err
	}
	token, err := config.EnsureToken(cfg)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ho := hub.Options{Logger: log, Registry: reg, Tested: sources.Tested}
	if f := cfg.RevisionFile(); f != "" {
		ho.Revisions = f // revisions grow across restarts, however fast the last run was
	}
	hist := openHistory(cfg, log, reg)
	if hist != nil {
		defer hist.Close() // after the writer ended (below)
		ho.Recorder = hist
	}
	h := hub.New(ho)
	srcs := buildSources(cfg, log)
	for _, s := range srcs {
		if err := h.Add(s); err != nil {
			return err
		}
	}
	for _, p := range cfg.Push {
		if err := h.AddPush(pushInfo(p)); err != nil {
			return fmt.Errorf("push source %s: %w", p.ID, err)
		}
	}
	remotes := make([]*hub.Remote, len(cfg.Remotes))
	for i, rc := range cfg.Remotes {
		if remotes[i], err = h.AddRemote(rc.ID); err != nil {
			return fmt.Errorf("remote %s: %w", rc.ID, err)
		}
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil && opt.fallbackListen != "" && errors.Is(err, syscall.EADDRINUSE) {
		log.Info("address in use; listening elsewhere", "addr", cfg.Listen)
		ln, err = lc.Listen(ctx, "tcp", opt.fallbackListen)
	}
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	addr := ln.Addr().String()
	if opt.listening != nil {
		defer opt.listening(addr)()
	}
	apiSrv := &api.Server{
		Hub: h, Events: sse.New(h, sse.Options{Logger: log, Heartbeat: cfg.Heartbeat}), Addr: addr, Token: token,
		AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins,
		Gatherer: reg, Version: versionString(), Logger: log,
	}
	if hist != nil {
		apiSrv.History = hist
	}
	if f := cfg.AnswersFile(); cfg.Hooks.Answer && f == "" {
		// every answer is audited: without a place for the log, none
		log.Warn("answering stays off: there is no state directory for its audit log")
	} else if cfg.Hooks.Answer {
		apiSrv.Answers = answer.New()
		defer apiSrv.Answers.Close()
		apiSrv.Audit = &answer.Audit{Path: f}
		apiSrv.AnswerLinks = slices.ContainsFunc(cfg.Notify.Webhooks, func(w config.Webhook) bool { return w.AnswerURL != "" })
	}
	fresh := &freshConns{}
	srv := &http.Server{
		Handler:           apiSrv.Handler(),
		ReadHeaderTimeout: readHeaderLimit,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		// No WriteTimeout: it would cut every event stream.
		BaseContext: func(net.Listener) context.Context { return ctx },
		ConnState:   fresh.track,
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}

	// The history's writer outlives the hub: it ends after the sources
	// stopped, writing what they told last.
	histCtx, histStop := context.WithCancel(context.Background())
	defer histStop()
	histDone := make(chan struct{})
	if hist != nil {
		go func() {
			defer close(histDone)
			if err := hist.Run(histCtx); err != nil {
				log.Error("history writer stopped", "err", err)
			}
		}()
	} else {
		close(histDone)
	}
	hubDone := make(chan error, 1)
	go func() { hubDone <- h.Run(ctx) }()
	var followers sync.WaitGroup
	defer func() { stop(); followers.Wait() }() // they end with ctx
	for i, rc := range cfg.Remotes {
		followers.Go(func() {
			remote.Run(ctx, remotes[i], rc, remote.Options{Linger: cfg.Linger, Logger: log, Backoff: a.backoff})
		})
	}
	hooksDone := make(chan struct{})
	go func() { defer close(hooksDone); newWebhooks(cfg, h, apiSrv.Answers, log).Run(ctx, h) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ln) }()

	if lb, _ := config.ListenIsLoopback(cfg.Listen); !lb && len(cfg.AllowedHosts) == 0 {
		log.Warn("listening beyond loopback, but only loopback Host names (and the listen IP) are accepted; add the names remote clients use to allowedHosts")
	}
	log.Info("serving", "addr", addr, "auth", cfg.Auth, "answering", cfg.Hooks.Answer, "sources", len(srcs), "push", len(cfg.Push), "remotes", len(cfg.Remotes), "version", versionString())
	if a.terminal(stdout) {
		fmt.Fprintf(stdout, "agentbridge: dashboard at %s\n", dashboardURL(addr, token))
	} else {
		fmt.Fprintf(stdout, "agentbridge: serving at %s (run `agentbridge open` for the dashboard)\n", dashboardURL(addr, ""))
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-serveDone:
		serveDone <- nil
	}
	if apiSrv.Answers != nil {
		apiSrv.Answers.Close() // every waiting hook: no verdict, at once
	}
	shutdown(srv, stop, serveDone, fresh, shutdownGrace, log)
	select {
	case <-hubDone:
	case <-time.After(sourcesGrace):
		log.Warn("sources did not stop in time")
	}
	<-hooksDone // its requests end with ctx
	histStop()
	<-histDone // what was recorded is written before the store closes
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serveErr)
	}
	log.Info("stopped")
	return nil
}

// shutdown stops srv quickly and within a bound: cancel (the base context
// of every request) ends the sources and every open stream at once; then
// Shutdown closes the listener and the idle connections and waits up to
// grace for requests in flight. Connections that have not sent a request
// yet (a browser's or Node's spare connection) would hold Shutdown up for
// 5 s (net/http treats them as busy until then), so they are closed as
// soon as the listener is; whatever is still open after grace is closed.
// serveDone delivers Serve's return.
func shutdown(srv *http.Server, cancel context.CancelFunc, serveDone <-chan error, fresh *freshConns, grace time.Duration, log *slog.Logger) {
	cancel()
	sctx, done := context.WithTimeout(context.Background(), grace)
	defer done()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(sctx) }()
	<-serveDone // the listener is closed: no connection is accepted any more
	fresh.closeAll()
	if err := <-shut; err != nil {
		log.Warn("requests still open at shutdown; closing them", "err", err)
		srv.Close()
	}
}

// freshConns tracks the server's connections that have not sent a request
// yet (http.StateNew), as its ConnState hook.
type freshConns struct {
	mu sync.Mutex
	m  map[net.Conn]struct{}
}

func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st == http.StateNew {
		if f.m == nil {
			f.m = map[net.Conn]struct{}{}
		}
		f.m[c] = struct{}{}
		return
	}
	delete(f.m, c)
}

// closeAll closes every connection still waiting for its first request.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.m {
		c.Close()
	}
	clear(f.m)
}

// dashboardURL is the URL to open: the listen address made dialable, with
// the one-time ?token= when auth is on.
func dashboardURL(addr, token string) string {
	if d, err := client.DialAddr(addr); err == nil {
		addr = d
	}
	u := "http://" + addr + "/"
	if token != "" {
		u += "?token=" + token
	}
	return u
}

// newWebhooks makes the configured webhooks' poster (notify.webhooks):
// its failures are diagnostics of the session's source.
func newWebhooks(cfg *config.Config, h *hub.Hub, answers *answer.Waits, log *slog.Logger) *notify.Webhooks {
	host, _ := os.Hostname()
	w := &notify.Webhooks{Logger: log, Host: host,
		Report: func(source string, d agentbridge.Diagnostic) { _ = h.Diagnose(source, d) }}
	if answers != nil {
		w.Link = answers.Link
	}
	for _, c := range cfg.Notify.Webhooks {
		w.Hooks = append(w.Hooks, notify.Webhook{URL: c.URL, Events: c.Events, Headers: c.Headers, AnswerURL: c.AnswerURL})
	}
	return w
}

// openHistory opens the history store the configuration names; nil when
// the history is off or cannot be opened (the bridge runs on without it:
// the history routes then answer history-off, and the log says why).
func openHistory(cfg *config.Config, log *slog.Logger, reg prometheus.Registerer) *history.Store {
	if !cfg.History.Enabled {
		return nil
	}
	if cfg.History.File == "" {
		log.Warn("history stays off: there is no state directory for its database")
		return nil
	}
	st, err := history.Open(cfg.History.File, history.Options{
		Prices: cfg.History.Prices, Retention: cfg.History.Retention, Logger: log, Registry: reg,
	})
	if err != nil {
		log.Error("history stays off: its database could not be opened", "err", err)
		return nil
	}
	return st
}
