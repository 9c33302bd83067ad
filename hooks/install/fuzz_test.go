package install

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscale/hujson"
)

// seeds adds the fixtures and the attack files (testdata/attacks) that
// end in ext.
func seeds(f *testing.F, ext string) {
	for _, dir := range []string{"testdata", filepath.Join("testdata", "attacks")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"+ext))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// userCommands lists the hook commands of a document that are not ours.
func userCommands(d *doc, source string) []string {
	var out []string
	forHandlers(d, func(ev string, _ *hujson.Array, _ int, h *hujson.Object) {
		if c := asString(member(h, "command")); c != "" {
			if _, ok := ours(c, source); !ok {
				out = append(out, ev+" "+c)
			}
		}
	})
	return out
}

// hasEmptyContainer reports whether a text holds an empty list or object:
// uninstall removes an event list or hooks object it leaves empty, and an
// empty container's inner spaces are not kept (both documented).
func hasEmptyContainer(b []byte) bool {
	v, err := hujson.Parse(b)
	if err != nil {
		return true
	}
	v.Minimize()
	p := v.Pack()
	return bytes.Contains(p, []byte("[]")) || bytes.Contains(p, []byte("{}"))
}

// FuzzSettings: a settings text install accepts becomes one that reads
// back with every event installed and the user's own hooks as they were;
// uninstall gives the text back byte for byte.
func FuzzSettings(f *testing.F) {
	seeds(f, ".json")
	f.Add([]byte(`{"hooks":{"Stop":[{"hooks":[{"command":"agentbridge hook codex"}]}]}}`))
	f.Add([]byte(`{"a":1,}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, dl := range []dialect{{}, {comments: true}} {
			d, err := parseDoc(b, dl)
			if err != nil {
				continue
			}
			before := userCommands(d, "codex")
			events := []string{"Stop", "PreToolUse"}
			if err := addHandlers(d, "codex", events, plainHandler(Command("/x/agent bridge", "codex"), Timeout)); err != nil {
				continue
			}
			out := d.pack()
			again, err := parseDoc(out, dl)
			if err != nil {
				t.Fatalf("install wrote what it cannot read: %v\n%s\n%s", err, b, out)
			}
			if got := userCommands(again, "codex"); strings.Join(got, "\n") != strings.Join(before, "\n") {
				t.Fatalf("the user's hooks changed:\n%q\n%q", before, got)
			}
			n := 0
			forHandlers(again, func(_ string, _ *hujson.Array, _ int, h *hujson.Object) {
				if _, ok := ours(asString(member(h, "command")), "codex"); ok {
					n++
				}
			})
			if n < len(events) {
				t.Fatalf("%d handlers of ours after install:\n%s", n, out)
			}
			removeHandlers(again, "codex")
			back := again.pack()
			if len(bytes.TrimSpace(b)) > 0 && !hasEmptyContainer(b) && !bytes.Equal(back, b) {
				t.Fatalf("install + uninstall changed the text:\n%q\n%q", b, back)
			}
		}
	})
}

// FuzzConfigTOML: a config.toml install accepts decodes, after install,
// with the feature on; a second install changes nothing; uninstall gives
// the text back (with the final newline install may add).
func FuzzConfigTOML(f *testing.F) {
	seeds(f, ".toml")
	f.Add([]byte("[features]\nhooks = false\n"))
	f.Add([]byte("a = '''\n[features]\n'''\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := string(b)
		if strings.Contains(s, tomlTag) || strings.Contains(s, tomlWas) {
			return
		}
		on, err := enableFeature(s)
		if err != nil {
			return
		}
		if st := featureState(on); st != "on" {
			t.Fatalf("feature %q after install:\n%s", st, on)
		}
		again, err := enableFeature(on)
		if err != nil || again != on {
			t.Fatalf("a second install changed the text: %v", err)
		}
		back, err := disableFeature(on)
		if err != nil {
			t.Fatalf("uninstall: %v\n%s", err, on)
		}
		if back != s && back != s+"\n" && back != s+"\r\n" {
			t.Fatalf("install + uninstall:\n%q\n%q", s, back)
		}
	})
}
