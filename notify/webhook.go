package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/defaults"
)

// Webhook is one receiver: where to POST, for which events, with which
// extra headers (an ntfy or Slack token of the user's, say).
type Webhook struct {
	URL     string
	Events  []string
	Headers map[string]string
	// AnswerURL, when set, is the bridge's address as the receiver
	// reaches it: a waiting transition whose prompt can be answered
	// carries Answer, a link AnswerURL/answer/<secret> (Webhooks.Link).
	AnswerURL string
}

// Defaults of Webhooks.
const (
	DefaultAttempts   = 5
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = 30 * time.Second
	DefaultTimeout    = 10 * time.Second
	DefaultQueue      = 64
)

// Webhooks posts every transition to the webhooks that asked for its
// event: one JSON POST (Transition) per transition and webhook, in order
// per webhook, one request in flight per webhook. A failed POST (a
// network error, a 5xx or 429 answer, a timeout) is tried again after a
// backoff that doubles, up to Attempts times; a 4xx answer is final. A
// webhook that cannot keep up holds at most Queue transitions; beyond that
// they are dropped. What failed for good, and what was dropped, is a
// diagnostic of the session's source (code webhook-failed,
// webhook-dropped) naming the webhook by its place in the configuration,
// never by its URL (a Slack or ntfy URL is itself a secret). Redirects
// are never followed (a 3xx answer is final), so the body and the
// configured headers go to the configured URL only. The body
// never carries the bridge's token or a path: titles and reasons are the
// redacted display text of the snapshot.
type Webhooks struct {
	Hooks      []Webhook
	Client     *http.Client // nil: a client with Timeout
	Logger     *slog.Logger // nil: slog.Default()
	Attempts   int          // 0: DefaultAttempts
	Backoff    time.Duration
	MaxBackoff time.Duration
	Timeout    time.Duration // per attempt
	Queue      int
	// Report records a diagnostic (the server passes hub.Diagnose).
	Report func(source string, d agentbridge.Diagnostic)
	// Host is the transitions' host for local sessions.
	Host string
	// Link is the secret of the answer link of a local session's open
	// permission prompt, "" when none (answer.Waits.Link); nil: no links.
	Link func(source, session string) string

	delivered atomic.Int64 // for tests: POSTs answered 2xx
}

func (w *Webhooks) defaults() {
	defaults.Positive(&w.Attempts, DefaultAttempts)
	defaults.Positive(&w.Backoff, DefaultBackoff)
	defaults.Positive(&w.MaxBackoff, DefaultMaxBackoff)
	defaults.Positive(&w.Timeout, DefaultTimeout)
	defaults.Positive(&w.Queue, DefaultQueue)
	if w.Client == nil {
		w.Client = &http.Client{Timeout: w.Timeout}
	}
	// A redirect is never followed: following one would send the body and
	// the configured headers (a token) wherever the receiver points, a
	// loopback service included. A 3xx is a final answer.
	c := *w.Client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	w.Client = &c
	if w.Logger == nil {
		w.Logger = slog.Default()
	}
}

// Run follows the hub and posts its transitions until ctx ends; then it
// waits for the requests in flight to end (they are cancelled).
func (w *Webhooks) Run(ctx context.Context, h *hub.Hub) {
	if len(w.Hooks) == 0 {
		return
	}
	w.defaults()
	qs := make([]chan Transition, len(w.Hooks))
	var wg sync.WaitGroup
	for i := range w.Hooks {
		qs[i] = make(chan Transition, w.Queue)
		wg.Go(func() { w.worker(ctx, i, qs[i]) })
	}
	t := Tracker{Host: w.Host, Now: func() int64 { return time.Now().UnixMilli() }}
	FollowHub(ctx, h, func(r hub.Record) {
		for k, tr := range t.Apply(r.Name, r.Data) {
			tr.id = strconv.FormatUint(r.Rev, 10) + "-" + strconv.Itoa(k)
			link := ""
			if w.Link != nil && tr.Status == EventWaiting && tr.Host == w.Host {
				link = w.Link(tr.Source, tr.SessionID)
			}
			for i, hk := range w.Hooks {
				if !slices.Contains(hk.Events, tr.Status) {
					continue
				}
				tr := tr
				if link != "" && hk.AnswerURL != "" {
					tr.Answer = &AnswerLink{URL: strings.TrimSuffix(hk.AnswerURL, "/") + "/answer/" + link}
				}
				select {
				case qs[i] <- tr:
				default:
					w.report(tr.Source, "webhook-dropped", fmt.Sprintf("webhook %d cannot keep up: a %s notification was dropped", i+1, tr.Status))
				}
			}
		}
	})
	wg.Wait()
}

func (w *Webhooks) report(source, code, msg string) {
	w.Logger.Warn("webhook", "code", code, "message", msg)
	if w.Report != nil {
		w.Report(source, agentbridge.Diagnostic{Code: code, Message: msg})
	}
}

func (w *Webhooks) worker(ctx context.Context, i int, q <-chan Transition) {
	for {
		select {
		case <-ctx.Done():
			return
		case tr := <-q:
			if err := w.deliver(ctx, w.Hooks[i], tr); err != nil && ctx.Err() == nil {
				w.report(tr.Source, "webhook-failed", fmt.Sprintf("webhook %d: a %s notification was not delivered: %v", i+1, tr.Status, err))
			}
		}
	}
}

// errFinal marks an answer that trying again cannot fix.
type errFinal struct{ error }

// deliver POSTs tr, trying again with backoff.
func (w *Webhooks) deliver(ctx context.Context, hk Webhook, tr Transition) error {
	body, err := json.Marshal(tr)
	if err != nil {
		return err
	}
	delay := w.Backoff
	for attempt := 1; ; attempt++ {
		err = w.post(ctx, hk, body, tr.id)
		if err == nil {
			w.delivered.Add(1)
			return nil
		}
		var fin errFinal
		if errors.As(err, &fin) {
			return err
		}
		if attempt >= w.Attempts {
			return fmt.Errorf("%w (after %d attempts)", err, attempt)
		}
		t := time.NewTimer(delay) // one-shot: the backoff
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, w.MaxBackoff)
	}
}

// post sends one attempt. Its errors never quote the URL.
func (w *Webhooks) post(ctx context.Context, hk Webhook, body []byte, id string) error {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hk.URL, bytes.NewReader(body))
	if err != nil {
		return errFinal{errors.New("the URL is not usable")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentbridge")
	req.Header.Set("Idempotency-Key", id) // the same for every attempt: a receiver can drop a repeat
	for k, v := range hk.Headers {
		req.Header.Set(k, v)
	}
	resp, err := w.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("no answer in time")
		}
		return errors.New("cannot reach it")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c == http.StatusTooManyRequests || c >= 500:
		return errors.New("it answered " + strconv.Itoa(c))
	case c >= 300 && c < 400:
		return errFinal{errors.New("it answered " + strconv.Itoa(c) + " (a redirect, not followed: configure the URL it names)")}
	default:
		return errFinal{errors.New("it answered " + strconv.Itoa(c))}
	}
}
