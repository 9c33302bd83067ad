package web

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The dashboard must work offline: every script, style, module import and
// icon it loads is one of the embedded files.
func TestDashboardLoadsOnlyEmbeddedFiles(t *testing.T) {
	refs := []struct {
		ext string
		re  *regexp.Regexp
	}{
		{".html", regexp.MustCompile(`(?:src|href)="([^"]*)"`)},
		{".js", regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^'";]*?from\s+'([^']*)'`)},
		{".js", regexp.MustCompile(`\bimport\(\s*'([^']*)'`)},
		{".css", regexp.MustCompile(`url\(\s*['"]?([^'")]*)`)},
		{".css", regexp.MustCompile(`@import\s+['"]([^'"]*)`)},
	}
	seen := 0
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if path.Ext(p) != r.ext {
				continue
			}
			for _, m := range r.re.FindAllStringSubmatch(string(body), -1) {
				ref := m[1]
				seen++
				if strings.HasPrefix(ref, "#") || strings.HasPrefix(ref, "data:") {
					continue
				}
				if strings.Contains(ref, "//") {
					t.Errorf("%s loads %q from the network; the dashboard must work offline", p, ref)
					continue
				}
				target := path.Clean(path.Join(path.Dir(p), ref))
				if strings.HasPrefix(ref, "/") {
					target = strings.TrimPrefix(path.Clean(ref), "/")
				}
				if _, err := fs.Stat(FS(), target); err != nil {
					t.Errorf("%s refers to %q, which is not embedded", p, ref)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d references checked", seen)
	if seen < 5 {
		t.Fatalf("found only %d references; the patterns no longer match the files", seen)
	}
}

// Untrusted text (titles, reasons, diagnostics from agents) must never be
// parsed as HTML: the page builds its DOM with textContent only.
func TestDashboardNeverParsesHTML(t *testing.T) {
	banned := regexp.MustCompile(`\.innerHTML\s*=|\.outerHTML\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(`)
	// Every script: the page's own and the vendored Chart.js (which must
	// not need eval either, or the page would need a looser policy).
	names, err := fs.Glob(FS(), "*.js")
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, "vendor/chart.umd.min.js")
	for _, want := range []string{"app.js", "view.js", "agentbridge-client.js", "history.js", "history-data.js", "dom.js"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not embedded", want)
		}
	}
	for _, name := range names {
		body, err := fs.ReadFile(FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		if m := banned.Find(body); m != nil {
			t.Errorf("%s uses %q", name, m)
		}
	}
}

// The vendored Chart.js is the one its README names: the version in the
// script's banner and the file's SHA-256.
func TestVendoredChartJS(t *testing.T) {
	script, err := fs.ReadFile(FS(), "vendor/chart.umd.min.js")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := fs.ReadFile(FS(), "vendor/README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`Chart\.js v(4\.\d+\.\d+)`).FindSubmatch(script)
	if m == nil {
		t.Fatal("the script has no Chart.js 4 banner")
	}
	if !strings.Contains(string(readme), "Chart.js "+string(m[1])) || !strings.Contains(string(readme), "chart.js@"+string(m[1])) {
		t.Errorf("vendor/README.md does not name Chart.js %s, the version of the script", m[1])
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(script))
	if !strings.Contains(string(readme), sum) {
		t.Errorf("vendor/README.md does not carry the script's sha256 %s", sum)
	}
	if _, err := fs.Stat(FS(), "vendor/chart.js-LICENSE.md"); err != nil {
		t.Errorf("Chart.js's licence is not beside it: %v", err)
	}
}

func TestHandlerServesTheClientModule(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	cases := []struct {
		path, typ, contains string
	}{
		{"/", "text/html", `<script type="module" src="app.js">`},
		{"/agentbridge-client.js", "text/javascript", "export class AgentBridgeClient"},
		{"/app.js", "text/javascript", "from './agentbridge-client.js'"},
		{"/style.css", "text/css", "prefers-color-scheme: dark"},
		{"/vendor/chart.umd.min.js", "text/javascript", "Chart.js v4"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			res, err := http.Get(srv.URL + c.path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
			if mt != c.typ {
				t.Errorf("Content-Type %q, want %s (a module script needs a JavaScript type)", mt, c.typ)
			}
			if !strings.Contains(string(body), c.contains) {
				t.Errorf("body lacks %q", c.contains)
			}
		})
	}
}
