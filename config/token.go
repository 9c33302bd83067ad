package config

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/internal/smallfile"
)

// ErrNoToken is returned by Token when auth is on, no token is configured
// and the token file does not exist yet (the server has not run).
var ErrNoToken = errors.New("no token: start the bridge once, or set AGENTBRIDGE_TOKEN")

// tokenRule keeps a token usable in an Authorization header and a cookie.
var tokenRule = regexp.MustCompile(`^[A-Za-z0-9._~+/=-]{16,512}$`)

func checkToken(t string) error {
	if !tokenRule.MatchString(t) {
		return errors.New("want 16 to 512 characters of [A-Za-z0-9._~+/=-]")
	}
	return nil
}

// Token returns the token a client presents, found as the server finds it:
// c.Token (AGENTBRIDGE_TOKEN or config), else the token file. It never
// creates the file; ErrNoToken says it does not exist. With auth none it
// returns "".
func Token(c *Config) (string, error) {
	if c.Auth == AuthNone {
		return "", nil
	}
	if c.Token != "" {
		return c.Token, nil
	}
	t, err := readToken(c.TokenFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoToken
	}
	return t, err
}

// Client returns a client of the bridge this configuration describes, as
// the client subcommands find it: the address is ClientAddr's (addr, else
// listen), a wildcard host made the loopback (client.DialAddr); the token is
// Token's. A token file that does not exist yet is not an error: the bridge
// may run with auth none, and a 401 answer says what to do.
func (c *Config) Client() (*client.Client, error) {
	addr, err := client.DialAddr(c.ClientAddr())
	if err != nil {
		return nil, err
	}
	token, err := Token(c)
	if err != nil && !errors.Is(err, ErrNoToken) {
		return nil, err
	}
	return client.New(addr, token), nil
}

// EnsureToken returns the server's token: c.Token when set, else the one
// kept in c.TokenFile, else a new random 256-bit token written to
// c.TokenFile (mode 0600, in a directory made with mode 0700) so that it
// survives restarts. A token file readable by others is refused. With auth
// none it returns "".
func EnsureToken(c *Config) (string, error) {
	t, err := Token(c)
	if !errors.Is(err, ErrNoToken) {
		return t, err
	}
	if err := os.MkdirAll(filepath.Dir(c.TokenFile), 0o700); err != nil {
		return "", fmt.Errorf("make token directory: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	t = base64.RawURLEncoding.EncodeToString(b)
	f, err := os.OpenFile(c.TokenFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another bridge made it just now
		return readToken(c.TokenFile)
	}
	if err != nil {
		return "", fmt.Errorf("create token file: %w", err)
	}
	_, werr := f.WriteString(t + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(c.TokenFile)
		return "", fmt.Errorf("write token file: %w", werr)
	}
	return t, nil
}

// readToken reads a token file, refusing one that others can read.
func readToken(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("read token: %w", fs.ErrNotExist)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s has mode %04o; others must not read it: chmod 600 it or delete it", path, fi.Mode().Perm())
	}
	b, err := smallfile.Read(path, 4<<10) // a token is at most 512 bytes
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if err := checkToken(t); err != nil {
		return "", fmt.Errorf("token file %s: %v", path, err)
	}
	return t, nil
}
