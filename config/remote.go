package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge/validate"
)

// Remote is another bridge whose sessions this one shows beside its own,
// each carrying the remote's id as its host. It is reached either over
// HTTP (URL, with the token in TokenFile) or through SSH (SSH names the
// host: the bridge runs `ssh HOST agentbridge stream` and reads the stream
// on its standard output, so that nothing listens on the remote machine
// beyond its loopback).
type Remote struct {
	// ID names the remote: lowercase [a-z][a-z0-9-]{0,63}, unique, not
	// "local" (the host filter's name for this bridge's own sessions).
	ID string `koanf:"id"`
	// URL is the remote bridge's base URL, http://host:port (e.g. the
	// local end of an SSH tunnel, or a container's published loopback
	// port). A password in it is taken as the token when TokenFile is
	// empty; it is never shown.
	URL string `koanf:"url"`
	// TokenFile holds the remote's token (mode 0600); read at each
	// connection, so that a rotated token is picked up.
	TokenFile string `koanf:"tokenFile"`
	// SSH is the host (as ssh takes it: an alias of ~/.ssh/config,
	// user@host, ...) on which `agentbridge stream` is run.
	SSH string `koanf:"ssh"`
}

// RemoteToken reads the token of an HTTP remote: TokenFile's (which must
// not be readable by others), else the password of URL, else "" (a remote
// run with auth none).
func RemoteToken(r Remote) (string, error) {
	if r.TokenFile != "" {
		return readToken(r.TokenFile)
	}
	if u, err := url.Parse(r.URL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			return p, nil
		}
	}
	return "", nil
}

// checkRemotes validates the remotes list.
func checkRemotes(rs []Remote) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	seen := map[string]bool{}
	for i, r := range rs {
		switch {
		case !validate.ValidHarnessID(r.ID) || r.ID == "local":
			bad("remotes[%d].id: %q is not a valid remote id ([a-z][a-z0-9-]{0,63}, not \"local\")", i, r.ID)
		case seen[r.ID]:
			bad("remotes[%d].id: %q is declared twice", i, r.ID)
		}
		seen[r.ID] = true
		switch {
		case (r.URL == "") == (r.SSH == ""):
			bad("remotes[%d]: give exactly one of url and ssh", i)
		case r.URL != "":
			u, err := url.Parse(r.URL)
			if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
				bad("remotes[%d].url: not http://host:port of a bridge", i)
			}
		case strings.HasPrefix(r.SSH, "-") || strings.ContainsAny(r.SSH, " \t\r\n\x00"):
			bad("remotes[%d].ssh: %q is not a host name for ssh", i, r.SSH)
		}
		if r.TokenFile != "" && !filepath.IsAbs(r.TokenFile) {
			bad("remotes[%d].tokenFile: must be an absolute path", i)
		}
		if r.SSH != "" && r.TokenFile != "" {
			bad("remotes[%d].tokenFile: an ssh remote needs no token (agentbridge stream reads the remote's own)", i)
		}
	}
	return errs
}
