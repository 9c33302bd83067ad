package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newOpenCmd(a *app) *cobra.Command {
	var printURL bool
	cmd := &cobra.Command{
		Use:   "open",
		Short: "open this user's dashboard in the browser (--print: print its URL)",
		Long: `Open the dashboard of the bridge this user runs (found as the other client
subcommands find it, a running demo included) in the browser, signed in.

The browser is $BROWSER (a colon-separated list of commands; %s stands for
the page), else open(1) on macOS, xdg-open in a Linux desktop session. It is handed a page in the
state directory, readable only by you, that forwards to the dashboard, so
the token never appears in a command line. With --print, or with no browser
to open, the URL with its token is printed instead, to paste into a browser.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.open(cmd.Context(), cmd.Flags(), printURL)
		},
	}
	clientFlags(cmd.Flags())
	cmd.Flags().BoolVar(&printURL, "print", false, "print the dashboard URL (with its token) instead of opening a browser")
	return cmd
}

// open finds the bridge, checks that it answers and takes the token, and
// opens (or prints) the dashboard URL that signs a browser in.
func (a *app) open(ctx context.Context, fs *pflag.FlagSet, printURL bool) error {
	c, err := newClient(fs, a.env)
	if err != nil {
		return err
	}
	var sources struct{}
	if err := c.GetJSON(ctx, "/v1/sources", nil, &sources); err != nil {
		return err
	}
	u := dashboardURL(c.Addr, c.Token)
	browse := a.browse
	if browse == nil && !printURL {
		browse = systemBrowser(a.env, c.stateDir)
	}
	if printURL || browse == nil {
		if !printURL {
			fmt.Fprintln(a.stderr, "agentbridge open: no browser to open (set BROWSER); paste this URL into one:")
		}
		_, err := fmt.Fprintln(a.stdout, u)
		return err
	}
	if err := browse(u); err != nil {
		return fmt.Errorf("open a browser: %w (`agentbridge open --print` prints the URL)", err)
	}
	_, err = fmt.Fprintf(a.stdout, "agentbridge open: opened %s in the browser\n", dashboardURL(c.Addr, ""))
	return err
}

// systemBrowser returns the function that opens a URL in the user's
// browser, or nil when there is none: the first command of $BROWSER found
// on PATH, else open(1) on macOS, xdg-open when a display is set
// (browserOpener).
func systemBrowser(env []string, stateDir string) func(string) error {
	var argv []string
	for _, c := range strings.Split(envGet(env, "BROWSER"), ":") {
		f := strings.Fields(c)
		if len(f) == 0 {
			continue
		}
		if _, err := lookPath(f[0], env); err == nil {
			argv = f
			break
		}
	}
	if argv == nil {
		display := envGet(env, "DISPLAY") != "" || envGet(env, "WAYLAND_DISPLAY") != ""
		if o := browserOpener(goos, display); o != "" {
			if _, err := lookPath(o, env); err == nil {
				argv = []string{o}
			}
		}
	}
	if argv == nil {
		return nil
	}
	return func(u string) error {
		page, err := forwardPage(stateDir, u)
		if err != nil {
			return err
		}
		args, placed := make([]string, 0, len(argv)+1), false
		for _, s := range argv[1:] {
			if strings.Contains(s, "%s") {
				s, placed = strings.ReplaceAll(s, "%s", page), true
			}
			args = append(args, s)
		}
		if !placed {
			args = append(args, page)
		}
		bin, err := lookPath(argv[0], env)
		if err != nil {
			return err
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			return err
		}
		// The browser may live on after we exit; it is not ours to wait for.
		return cmd.Process.Release()
	}
}

// lookPath finds name on the environment's PATH (not the process's).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(envGet(env, "PATH")) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// forwardPage writes a page that forwards to u into the state directory
// (mode 0600; the token file beside it holds the same secret) and returns
// its path. The browser opens the page, so u never appears in argv.
func forwardPage(stateDir, u string) (string, error) {
	if stateDir == "" {
		return "", errors.New("no state directory for the sign-in page (HOME and XDG_STATE_HOME are unset)")
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	e := html.EscapeString(u)
	body := `<!doctype html><html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">` +
		`<meta http-equiv="refresh" content="0;url=` + e + `"><title>agentbridge</title></head>` +
		`<body><a href="` + e + `">Open the agentbridge dashboard</a></body></html>` + "\n"
	f, err := os.CreateTemp(stateDir, "open-*.html")
	if err != nil {
		return "", fmt.Errorf("sign-in page: %w", err)
	}
	_, err = f.WriteString(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	path := filepath.Join(stateDir, "open.html")
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("sign-in page: %w", err)
	}
	return path, nil
}
