package api

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzDecodeOps: any body decodes without panic; issues have root paths
// ("$[i]…" only for arrays); without issues every op is a known kind.
func FuzzDecodeOps(f *testing.F) {
	f.Add([]byte(`{"op":"upsert","session":{"id":"s","harness":"h","status":"idle"}}`))
	f.Add([]byte(`[{"op":"reset","sessions":[]},{"op":"remove","sessionId":"s"}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ops, single, issues := DecodeOps(body)
		for _, is := range issues {
			if !strings.HasPrefix(is.Path, "$") || is.Code == "" || is.Message == "" {
				t.Fatalf("DecodeOps(%q): malformed issue %+v", body, is)
			}
			if single && strings.HasPrefix(is.Path, "$[") {
				t.Fatalf("DecodeOps(%q): single op with array path %q", body, is.Path)
			}
		}
		if len(issues) > 0 {
			return
		}
		for _, op := range ops {
			if _, ok := opFields[op.Op]; !ok {
				t.Fatalf("DecodeOps(%q): no issue but op kind %q", body, op.Op)
			}
		}
	})
}

// FuzzParseFilter: any query parses or is refused with a 400, never a
// panic; an accepted filter holds only valid values.
func FuzzParseFilter(f *testing.F) {
	f.Add("source=codex&status=running,done&project=/home/u&ancestorPid=1")
	f.Add("status=bogus")
	f.Fuzz(func(t *testing.T, query string) {
		r := &http.Request{URL: &url.URL{Path: "/v1/sessions", RawQuery: query}}
		fl, err := parseFilter(r, "since", "format")
		if err != nil {
			e, ok := err.(*Error)
			if !ok || e.Status != http.StatusBadRequest {
				t.Fatalf("parseFilter(%q) = %v, want a 400 *Error", query, err)
			}
			return
		}
		for _, s := range fl.Statuses {
			if !validStatus(string(s)) {
				t.Fatalf("parseFilter(%q) accepted status %q", query, s)
			}
		}
		if fl.AncestorPID < 0 || (fl.Project != "" && fl.Project[0] != '/') {
			t.Fatalf("parseFilter(%q) = %+v", query, fl)
		}
	})
}
