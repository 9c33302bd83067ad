package notify

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
)

// hostileReceiver accepts connections, reads each request's head and
// answers with serve (the connection is closed when it returns or the
// test ends).
func hostileReceiver(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				go func() { <-stop; c.Close() }()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				serve(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/hook"
}

// TestWebhookHostileReceivers: a receiver that answers without end (a
// status line then a byte at a time, endless 1xx answers, an endless
// header, an endless body) neither holds up the other webhooks nor keeps
// the bridge from shutting down (the test's cleanup waits for Run); one
// that fails is reported with a diagnostic naming neither its address
// nor the transition's text.
func TestWebhookHostileReceivers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(c net.Conn)
		fails bool // reported as failed (quickly: it is refused, not waited for)
	}{
		{"slow-loris status line", func(c net.Conn) {
			for _, b := range []byte("HTTP/1.1 200 OK\r\nX: ") {
				if _, err := c.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			for {
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}, false},
		{"endless 1xx", func(c net.Conn) {
			for {
				if _, err := c.Write([]byte("HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n")); err != nil {
					return
				}
			}
		}, true},
		{"endless header", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 200 OK\r\nX-Big: "))
			chunk := []byte(strings.Repeat("a", 64<<10))
			for {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}, true},
		{"endless body", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n"))
			chunk := make([]byte, 64<<10)
			for {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}, false},
		{"HTTP/0.9 garbage", func(c net.Conn) {
			c.Write([]byte("\x00\xff<html>" + strings.Repeat("x", 1<<20)))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := hostileReceiver(t, tc.serve)
			good := newReceiver(t, 0, 0)
			b := newBridge(t,
				Webhook{URL: bad, Events: []string{EventWaiting}},
				Webhook{URL: good.URL, Events: []string{EventWaiting}})
			b.wait(t, "s1", "w1", "approve Bash")
			good.wait(t, 1)
			if !tc.fails {
				return
			}
			select {
			case d := <-b.diags:
				port := bad[strings.LastIndex(bad, ":")+1:]
				if d.Code != "webhook-failed" || strings.Contains(d.Message, port) || strings.Contains(d.Message, "approve") {
					t.Errorf("diagnostic %+v", d)
				}
			case <-time.After(20 * time.Second): // a hang bound
				t.Fatal("no diagnostic for a receiver that fails")
			}
		})
	}
}

// TestTransitionTextIsShownNotActed: a title and a wait reason holding a
// bidi override, an isolate, zero-width, filler and tag characters and
// a line separator reach a webhook (and so a desktop notification, built
// from the same transition) neutralised in every field people read:
// title, waitingFor and text. Before, they were sent as they were.
func TestTransitionTextIsShownNotActed(t *testing.T) {
	r := newReceiver(t, 0, 0)
	b := newBridge(t, Webhook{URL: r.URL, Events: []string{EventWaiting}})
	b.event(t, "s1", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "fix\u202Eexe.txt\u2066 bug\u200b\U000E0041"})
	b.wait(t, "s1", "w1", "approve\u202d rm\u2028-rf\u061c x\u3164")
	r.wait(t, 1)
	tr := r.snapshot()[0]
	for what, s := range map[string]string{"title": tr.Title, "waitingFor": tr.WaitingFor, "text": tr.Text} {
		for _, c := range s {
			if c == 0x9b || c == 0x2028 || text.Hidden(c) {
				t.Errorf("%s %q carries %U", what, s, c)
			}
		}
	}
	if !strings.Contains(tr.WaitingFor, "approve") || !strings.Contains(tr.Title, "fix") {
		t.Errorf("the text itself is lost: %+v", tr)
	}
}
