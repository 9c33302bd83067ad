package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadRemotes(t *testing.T) {
	t.Parallel()
	_, env := setup(t, `
remotes:
  - {id: devbox, ssh: devbox.example.com}
  - {id: box, url: "http://127.0.0.1:17391", tokenFile: /run/box.token}
`)
	c, err := Load(nil, env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []Remote{{ID: "devbox", SSH: "devbox.example.com"}, {ID: "box", URL: "http://127.0.0.1:17391", TokenFile: "/run/box.token"}}
	if diff := cmp.Diff(want, c.Remotes); diff != "" {
		t.Errorf("remotes (-want +got):\n%s", diff)
	}
}

func TestRemoteErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, yaml, want string
	}{
		{"bad id", `[{id: Dev, ssh: h}]`, "remotes[0].id"},
		{"local is taken", `[{id: local, ssh: h}]`, "remotes[0].id"},
		{"twice", `[{id: a, ssh: h}, {id: a, ssh: g}]`, `"a" is declared twice`},
		{"neither", `[{id: a}]`, "exactly one of url and ssh"},
		{"both", `[{id: a, ssh: h, url: "http://127.0.0.1:1"}]`, "exactly one of url and ssh"},
		{"not http", `[{id: a, url: "https://127.0.0.1:1"}]`, "remotes[0].url"},
		{"not http, with a password", `[{id: a, url: "https://me:s3cret@127.0.0.1:1"}]`, "remotes[0].url"},
		{"a path", `[{id: a, url: "http://127.0.0.1:1/v1"}]`, "remotes[0].url"},
		{"an ssh option", `[{id: a, ssh: "-oProxyCommand=x"}]`, "remotes[0].ssh"},
		{"relative token file", `[{id: a, url: "http://127.0.0.1:1", tokenFile: tok}]`, "must be an absolute path"},
		{"token for ssh", `[{id: a, ssh: h, tokenFile: /tok}]`, "needs no token"},
		{"unknown key", `[{id: a, ssh: h, port: 22}]`, "port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, env := setup(t, "remotes: "+c.yaml+"\n")
			_, err := Load(nil, env)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load = %v, want an error with %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows a URL's password: %v", err)
			}
		})
	}
}

func TestRemoteToken(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(p, []byte("file-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    Remote
		want string
	}{
		{Remote{URL: "http://127.0.0.1:1", TokenFile: p}, "file-token-0123456789abcdef"},
		{Remote{URL: "http://me:s3cret@127.0.0.1:1"}, "s3cret"},
		{Remote{URL: "http://127.0.0.1:1"}, ""},
	} {
		if got, err := RemoteToken(c.r); err != nil || got != c.want {
			t.Errorf("RemoteToken(%+v) = %q, %v; want %q", c.r, got, err, c.want)
		}
	}
}
