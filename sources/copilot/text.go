package copilot

import "net/url"

// host returns the host of a URL (never its path or query, which may carry
// tokens), or "" when raw is not one.
func host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
