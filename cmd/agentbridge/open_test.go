package main

import (
	"context"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// signIn opens link as a browser does (following the redirect, keeping
// cookies) and checks that it ends on the dashboard, signed in, with the
// token gone from the address bar.
func signIn(t *testing.T, link string) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("dashboard link %q: want a URL with a token (%v)", link, err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(link)
	if err != nil {
		t.Fatalf("GET %s: %v", link, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<html") {
		t.Fatalf("GET dashboard link: %d, want the dashboard page", resp.StatusCode)
	}
	if resp.Request.URL.Query().Has("token") {
		t.Errorf("the address bar still holds the token: %s", resp.Request.URL)
	}
	// The browser is signed in: its cookie alone opens the API.
	resp, err = browser.Get(u.Scheme + "://" + u.Host + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/sessions with the browser's cookie: %d, want 200", resp.StatusCode)
	}
}

// openCmd runs `agentbridge open ARGS` with env.
func openCmd(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e strings.Builder
	err = runArgs(t.Context(), "open", args, env, strings.NewReader(""), &o, &e, watchBackoff)
	return o.String(), e.String(), err
}

func TestOpenPrintSignsABrowserIn(t *testing.T) {
	t.Parallel()
	env, addr, _ := realBridge(t)
	stdout, stderr, err := openCmd(t, env, "--print")
	if err != nil {
		t.Fatalf("open --print: %v (%s)", err, stderr)
	}
	if !strings.HasPrefix(stdout, "http://"+addr+"/?token=") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("open --print = %q, want one line: the dashboard URL at %s with its token", stdout, addr)
	}
	signIn(t, strings.TrimSpace(stdout))
}

// TestOpenLaunchesTheBrowser: without --print, open runs $BROWSER with a
// private page that forwards to the dashboard, so the token is in no
// command line, and says what it opened without the token.
func TestOpenLaunchesTheBrowser(t *testing.T) {
	t.Parallel()
	env, addr, token := realBridge(t)
	bin := t.TempDir()
	got := filepath.Join(bin, "argv")
	writeFile(t, filepath.Join(bin, "fake-browser"), "#!/bin/sh\nprintf '%s\\n' \"$@\" > "+got+".tmp && mv "+got+".tmp "+got+"\n", 0o700)
	env = append(env, "BROWSER=fake-browser", "PATH="+bin+":"+os.Getenv("PATH"))
	stdout, stderr, err := openCmd(t, env)
	if err != nil {
		t.Fatalf("open: %v (%s)", err, stderr)
	}
	if want := "agentbridge open: opened http://" + addr + "/ in the browser\n"; stdout != want {
		t.Errorf("open said %q, want %q", stdout, want)
	}
	var argv string
	waitUntil(t, "the browser to start", func() bool {
		b, err := os.ReadFile(got)
		argv = string(b)
		return err == nil
	})
	if strings.Contains(argv, token) {
		t.Fatalf("the token is in the browser's command line: %q", argv)
	}
	page := strings.TrimSpace(argv)
	fi, err := os.Stat(page)
	if err != nil {
		t.Fatalf("the browser was given %q: %v", page, err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("sign-in page mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(page)
	m := regexp.MustCompile(`href="([^"]+)"`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("sign-in page has no link:\n%s", b)
	}
	signIn(t, html.UnescapeString(m[1]))
}

func TestOpenWithoutABrowserPrintsTheURL(t *testing.T) {
	t.Parallel()
	env, addr, _ := realBridge(t)
	env = append(env, "PATH=/nonexistent") // no xdg-open, no DISPLAY, no BROWSER
	stdout, stderr, err := openCmd(t, env)
	if err != nil {
		t.Fatalf("open: %v (%s)", err, stderr)
	}
	if !strings.HasPrefix(stdout, "http://"+addr+"/?token=") || !strings.Contains(stderr, "no browser") {
		t.Errorf("open with no browser: stdout %q, stderr %q; want the URL and why it was not opened", stdout, stderr)
	}
}

func TestOpenNeedsARunningBridge(t *testing.T) {
	t.Parallel()
	_, _, err := openCmd(t, testEnv(t), "--print", "--addr", bridgetest.FreeAddr(t))
	if err == nil || !strings.Contains(err.Error(), "no agentbridge at") {
		t.Errorf("open with no bridge: %v, want it to say none runs", err)
	}
}

// TestDemoAddrFile: the recorded address is found while something answers
// there, ignored once nothing does, and removed only by its own demo.
func TestDemoAddrFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "agentbridge")
	if _, ok := runningDemo(dir); ok {
		t.Fatal("found a demo before any was recorded")
	}
	live := realListener(t)
	remove, err := recordDemoAddr(dir, live)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := runningDemo(dir); !ok || got != live {
		t.Errorf("runningDemo = %q, %v; want %q", got, ok, live)
	}
	removeOther, _ := recordDemoAddr(dir, bridgetest.FreeAddr(t)) // a second demo took over, then died
	remove()
	if _, ok := readDemoAddr(dir); !ok {
		t.Error("the first demo removed the second one's address")
	}
	if _, ok := runningDemo(dir); ok {
		t.Error("found a demo where nothing answers")
	}
	removeOther()
	if _, ok := readDemoAddr(dir); ok {
		t.Error("the address file is still there")
	}
	writeFile(t, demoAddrFile(dir), "not an address\n", 0o600)
	if _, ok := readDemoAddr(dir); ok {
		t.Error("took garbage for an address")
	}
}

// realListener listens on a loopback port until the test ends.
func realListener(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}
