package remote_test

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// tcpSwitch forwards a loopback address to a bridge (as the bridge's own
// Host) and can be taken down (every connection cut, nothing listening)
// and brought up again on the same address: a remote that goes away and
// comes back.
type tcpSwitch struct {
	t     testing.TB
	addr  string
	proxy *httputil.ReverseProxy

	mu  sync.Mutex
	srv *http.Server
	wg  sync.WaitGroup
}

func newSwitch(t testing.TB, target string) *tcpSwitch {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &url.URL{Scheme: "http", Host: target}
	p := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = target },
		FlushInterval: -1,
		ErrorLog:      nil,
	}
	s := &tcpSwitch{t: t, addr: ln.Addr().String(), proxy: p}
	s.serve(ln)
	t.Cleanup(func() { s.down(); s.wg.Wait() })
	return s
}

func (s *tcpSwitch) serve(ln net.Listener) {
	srv := &http.Server{Handler: s.proxy}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	s.wg.Go(func() { srv.Serve(ln) })
}

func (s *tcpSwitch) down() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
}

func (s *tcpSwitch) up() {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.serve(ln)
}
