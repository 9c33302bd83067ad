package main

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// servingLine matches what serve prints when stdout is not a terminal.
var servingLine = regexp.MustCompile("^agentbridge: serving at (http://[^ ]+/) \\(run `agentbridge open` for the dashboard\\)$")

// dashboardFrom turns the line serve printed to a pipe into the dashboard
// URL with its token, the way a user gets it: `agentbridge open --print`
// with the same environment. serve never prints the token to a pipe, so a
// line with one fails the test.
func dashboardFrom(t *testing.T, line string, env []string) (*url.URL, error) {
	t.Helper()
	if strings.Contains(line, "token=") {
		t.Errorf("serve printed the token to a pipe: %q", line)
	}
	m := servingLine.FindStringSubmatch(line)
	if m == nil {
		return nil, fmt.Errorf("stdout line %q, want the address serve is serving at", line)
	}
	base, err := url.Parse(m[1])
	if err != nil {
		return nil, err
	}
	var out, errb strings.Builder
	if err := runArgs(context.Background(), "open", []string{"--print", "--addr", base.Host}, env, strings.NewReader(""), &out, &errb, watchBackoff); err != nil {
		return nil, fmt.Errorf("open --print: %v (%s)", err, errb.String())
	}
	return url.Parse(strings.TrimSpace(out.String()))
}
