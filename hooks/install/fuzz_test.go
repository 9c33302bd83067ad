package install

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func seeds(f *testing.F, ext string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"+ext))
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
}

// FuzzSettings: any settings object, with hooks installed and removed
// again, is the object it was (in the layout install writes).
func FuzzSettings(f *testing.F) {
	seeds(f, ".json")
	f.Add([]byte(`{"hooks":{"Stop":[{"hooks":[{"command":"agentbridge hook codex"}]}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := parseDoc(b)
		if err != nil {
			return
		}
		if hs := doc.get("hooks"); hs != nil && (len(hs.vals) == 0 || slicesContainsEmpty(hs)) {
			return // an empty list the user had is removed with ours: documented
		}
		indent, final := layout(b)
		want := format(doc, indent, final)
		if err := addHandlers(doc, "codex", Command("/x/agentbridge", "codex"), []string{"Stop", "PreToolUse"}, Timeout); err != nil {
			return
		}
		again, err := parseDoc(format(doc, indent, final))
		if err != nil {
			t.Fatalf("install wrote what it cannot read: %v", err)
		}
		removeHandlers(again, "codex")
		removeHandlers(mustParse(want), "codex")
		got := format(again, indent, final)
		clean := mustParse(want)
		removeHandlers(clean, "codex")
		if !bytes.Equal(got, format(clean, indent, final)) {
			t.Fatalf("install + uninstall changed the settings:\n%s\n%s", want, got)
		}
	})
}

// FuzzConfigTOML: install then uninstall gives the text back (with the
// final newline install may add).
func FuzzConfigTOML(f *testing.F) {
	seeds(f, ".toml")
	f.Add([]byte("[features]\nhooks = false\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := string(b)
		if strings.Contains(s, tomlTag) || strings.Contains(s, tomlWas) {
			return
		}
		on, err := enableFeature(s)
		if err != nil {
			return
		}
		if featureState(on) == "off" {
			t.Fatalf("still off after install:\n%s", on)
		}
		again, _ := enableFeature(on)
		if again != on {
			t.Fatalf("a second install changed the text")
		}
		back := disableFeature(on)
		if back != s && back != s+"\n" {
			t.Fatalf("install + uninstall:\n%q\n%q", s, back)
		}
	})
}

func slicesContainsEmpty(hs *node) bool {
	for _, v := range hs.vals {
		if v.kind == '[' && len(v.vals) == 0 {
			return true
		}
		if v.kind == '[' {
			for _, g := range v.vals {
				if l := g.get("hooks"); l != nil && l.kind == '[' && len(l.vals) == 0 {
					return true
				}
			}
		}
	}
	return false
}
