package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// cookieMaxAge is how long the dashboard's cookie lives. The token survives
// restarts (it is kept in the token file), so the cookie may too.
const cookieMaxAge = 30 * 24 * time.Hour

// CookieName is the name of the dashboard's session cookie for a bridge on
// port. Cookies ignore ports, so the port is part of the name: two bridges
// on one host keep their own.
func CookieName(port string) string { return "agentbridge_" + port }

func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		return rc.RoutePattern()
	}
	return ""
}

// isLoopbackName reports whether host (without port or brackets) is
// "localhost" or a loopback IP.
func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// splitHost splits a Host header into name and port; a missing port is
// port 80 (the http default, which browsers omit).
func splitHost(h string) (name, port string, ok bool) {
	if h == "" {
		return "", "", false
	}
	name, port, err := net.SplitHostPort(h)
	if err != nil {
		if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
			return "", "", false // "a:b:c", a bare IPv6 address or a malformed port
		}
		name, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), "80"
	}
	if name == "" || port == "" {
		return "", "", false
	}
	return name, port, true
}

// hostAllowed reports whether a Host header names this server: localhost or
// a loopback IP with the listen port, the listen address's own host, or a
// configured name.
func (s *Server) hostAllowed(h string) bool {
	name, port, ok := splitHost(h)
	if !ok {
		return false
	}
	if port == s.port && isLoopbackName(name) {
		return true
	}
	if lh, _, err := net.SplitHostPort(s.Addr); err == nil && port == s.port && lh != "" && strings.EqualFold(name, lh) {
		if ip, err := netip.ParseAddr(lh); err != nil || !ip.IsUnspecified() {
			return true
		}
	}
	for _, a := range s.AllowedHosts {
		an, ap, err := net.SplitHostPort(a)
		if err != nil {
			an, ap = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"), s.port
		}
		if strings.EqualFold(an, name) && ap == port {
			return true
		}
	}
	return false
}

// checkHost refuses any request whose Host is not this server (DNS
// rebinding defence), including an empty Host.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeProblem(w, errorf(http.StatusForbidden, "forbidden-host",
				"the Host header does not name this bridge; use localhost or 127.0.0.1 with its port, or add the name to allowedHosts"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed reports whether a browser origin may call the API: the
// bridge's own origins (http://localhost:PORT, a loopback IP with the
// port, an allowed Host) or a configured origin.
func (s *Server) originAllowed(origin string) bool {
	if slices.Contains(s.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return false
	}
	return s.hostAllowed(u.Host)
}

// checkOrigin refuses browser requests from other origins: a foreign
// Origin header, or, without one, Sec-Fetch-Site other than same-origin or
// none (a cross-site or same-site page, e.g. another port on localhost).
// Requests without either header (curl, the CLI) pass.
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" {
			if !s.originAllowed(origin) {
				writeProblem(w, errorf(http.StatusForbidden, "forbidden-origin",
					"requests from this origin are refused; add it to allowedOrigins to permit it"))
				return
			}
		} else if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			writeProblem(w, errorf(http.StatusForbidden, "forbidden-origin", "cross-site requests are refused"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cors answers configured origins, and only them, with CORS headers
// (exact origin, Vary: Origin), including preflights. With no configured
// origin it adds nothing.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if len(s.AllowedOrigins) == 0 || !slices.Contains(s.AllowedOrigins, origin) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", "Content-Type")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// validToken compares in constant time.
func (s *Server) validToken(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.Token)) == 1
}

// cookieLabel is what the dashboard's session credential is derived with.
const cookieLabel = "agentbridge dashboard session v1"

// SessionCookie returns the value of the dashboard's cookie for token:
// HMAC-SHA256 of a fixed label keyed with the token, base64url. It is not
// the token (a cookie that leaks, e.g. to another service on the same host,
// whose ports browsers do not tell apart, does not give the token away and
// does not work as a bearer token), it survives restarts as the token does,
// and rotating the token revokes every cookie at once.
func SessionCookie(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(cookieLabel))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validCookie compares a presented cookie with the session credential in
// constant time.
func (s *Server) validCookie(c string) bool {
	return c != "" && s.cookie != "" && subtle.ConstantTimeCompare([]byte(c), []byte(s.cookie)) == 1
}

// authenticate requires the token as "Authorization: Bearer" or the
// dashboard's cookie. With no Token configured it lets everything pass.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Token == "" {
			next.ServeHTTP(w, r)
			return
		}
		presented, fromCookie := "", false
		if a := r.Header.Get("Authorization"); a != "" {
			scheme, t, _ := strings.Cut(a, " ")
			if !strings.EqualFold(scheme, "Bearer") {
				s.unauthorized(w, "use Authorization: Bearer with the bridge's token")
				return
			}
			presented = strings.TrimSpace(t)
		} else if cs := r.CookiesNamed(CookieName(s.port)); len(cs) > 0 {
			// A page on another port of this host can set a cookie of
			// the same name (cookies ignore ports), with a longer path so
			// that browsers send it first: any of them that is valid
			// signs the request in, so such a cookie cannot sign the
			// dashboard out.
			presented, fromCookie = cs[0].Value, true
			for _, c := range cs {
				if s.validCookie(c.Value) {
					presented = c.Value
					break
				}
			}
		} else {
			s.unauthorized(w, "this route needs the bridge's token (Authorization: Bearer, or sign the dashboard in with `agentbridge open`)")
			return
		}
		if fromCookie && !s.validCookie(presented) {
			s.unauthorized(w, "the dashboard's cookie is not valid for this bridge (was the token rotated?); open the dashboard again")
			return
		}
		if !fromCookie && !s.validToken(presented) {
			s.unauthorized(w, "the token is not this bridge's token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) unauthorized(w http.ResponseWriter, detail string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="agentbridge"`)
	writeProblem(w, errorf(http.StatusUnauthorized, "unauthorized", "%s", detail))
}

// crossOriginProtection is Go's CSRF defence for state-changing requests
// (Sec-Fetch-Site, else Origin against Host), trusting the configured
// origins. checkOrigin already refuses most of what it would; this is the
// second lock on the door.
func (s *Server) crossOriginProtection() func(http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	own := []string{"http://localhost:" + s.port, "http://127.0.0.1:" + s.port, "http://[::1]:" + s.port}
	for _, h := range s.AllowedHosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), s.port)
		}
		own = append(own, "http://"+h)
	}
	for _, o := range append(own, s.AllowedOrigins...) {
		if err := p.AddTrustedOrigin(o); err != nil {
			s.Logger.Warn("ignoring an allowed origin that is not scheme://host[:port]", "err", err)
		}
	}
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, errorf(http.StatusForbidden, "forbidden-origin", "cross-origin requests that change state are refused"))
	}))
	return p.Handler
}

// requireJSON refuses a body that is not application/json (415) or larger
// than MaxBody (413), and limits what handlers can read.
func (s *Server) requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			writeProblem(w, errorf(http.StatusUnsupportedMediaType, "unsupported-media-type", "send the body as Content-Type: application/json"))
			return
		}
		if r.ContentLength > MaxBody {
			writeProblem(w, tooLarge())
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		next.ServeHTTP(w, r)
	})
}

// DefaultBodyTimeout is Server.BodyTimeout's default: a 1 MiB body over
// loopback takes milliseconds.
const DefaultBodyTimeout = 10 * time.Second

// guardBody protects the server from a request that declares a body and
// then sends it slowly or never. Reading the body has a deadline
// (BodyTimeout, from the end of the headers; then 408). And until the body
// is read to its end, the answer carries "Connection: close": a request
// refused before its body is read (no token, a wrong Host or Origin, not
// JSON) is answered at once and its connection closed, instead of the
// server waiting to drain the body so as to keep the connection. So
// authentication happens before any body is read, and a hundred such
// requests do not hold a hundred descriptors.
func (s *Server) guardBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		timeout := s.BodyTimeout
		if timeout <= 0 {
			timeout = DefaultBodyTimeout
		}
		_ = rc.SetReadDeadline(time.Now().Add(timeout)) // not every writer supports it (tests)
		w.Header().Set("Connection", "close")
		r.Body = &guardedBody{ReadCloser: r.Body, left: r.ContentLength, h: w.Header(), rc: rc}
		next.ServeHTTP(w, r)
	})
}

// guardedBody notices when the body has been read to its end: the
// connection may then be kept, and the read deadline is lifted (the
// server's own background read must not time out under a slow handler).
type guardedBody struct {
	io.ReadCloser
	left int64 // bytes still declared; -1: chunked
	h    http.Header
	rc   *http.ResponseController
	done bool
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if !b.done && (errors.Is(err, io.EOF) || (b.left == 0 && err == nil)) {
		b.done = true
		b.h.Del("Connection")
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func tooLarge() *Error {
	return errorf(http.StatusRequestEntityTooLarge, "body-too-large", "the body is over the 1 MiB limit")
}

// wantsPage reports whether r is a browser opening a page (rather than a
// script that wants a problem document).
func wantsPage(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Dest") == "document" || strings.Contains(r.Header.Get("Accept"), "text/html")
}

// signInPage answers a browser whose dashboard link holds a wrong token:
// 401, no cookie, and the dashboard page itself, which takes the token out
// of the address bar and shows its sign-in card (as with no token at all),
// rather than a raw problem document.
func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) {
	page, err := fs.ReadFile(s.Dashboard, "index.html")
	if err != nil {
		s.unauthorized(w, "the token in the URL is not this bridge's token; run `agentbridge open` for the dashboard")
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="agentbridge"`)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusUnauthorized)
	if r.Method != http.MethodHead {
		w.Write(page)
	}
}

// handleDashboard serves the dashboard's files. GET with ?token= trades a
// valid token for the session cookie (HttpOnly, SameSite=Strict, Path=/)
// and redirects (303) to the same URL without the token.
func (s *Server) handleDashboard(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("token") {
		if s.Token != "" && !s.validToken(q.Get("token")) {
			if wantsPage(r) {
				s.signInPage(w, r)
				return
			}
			s.unauthorized(w, "the token in the URL is not this bridge's token; run `agentbridge open` for the dashboard")
			return
		}
		if s.Token != "" {
			http.SetCookie(w, &http.Cookie{
				Name: CookieName(s.port), Value: s.cookie, Path: "/",
				MaxAge: int(cookieMaxAge / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode,
			})
		}
		q.Del("token")
		u := url.URL{Path: ownPath(r.URL.Path), RawQuery: q.Encode()}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	if name == "" {
		name = "index.html"
	}
	if fi, err := fs.Stat(s.Dashboard, name); !fs.ValidPath(name) || err != nil || !fi.Mode().IsRegular() {
		s.handleNotFound(w, r)
		return
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.ServeFileFS(w, r, s.Dashboard, name)
}

// ownPath returns p as a redirect target that stays on the bridge's own
// origin: cleaned, so that "//evil.example/" (which browsers read as
// another host) becomes "/evil.example", and "/" for anything with a
// backslash (which browsers read as a slash) or a control character.
func ownPath(p string) string {
	p = path.Clean("/" + p)
	if strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\x00\r\n\t") {
		return "/"
	}
	return p
}
