package kit

import "testing"

func TestMeta(t *testing.T) {
	var m Meta
	if _, ok := m.FirstTitle("   "); ok {
		t.Error("a blank prompt gave a title")
	}
	if e, ok := m.FirstTitle("fix the build"); !ok || e.Title != "fix the build" {
		t.Errorf("first prompt: %+v, %v", e, ok)
	}
	if _, ok := m.FirstTitle("second prompt"); ok {
		t.Error("a second prompt renamed the session")
	}
	for i, tc := range []struct {
		model string
		want  bool
	}{{"", false}, {"gemini-2.5-pro", true}, {"gemini-2.5-pro", false}, {"qwen3-coder", true}} {
		if e, ok := m.Model(tc.model); ok != tc.want || (ok && e.Model != tc.model) {
			t.Errorf("%d: Model(%q) = %+v, %v", i, tc.model, e, ok)
		}
	}
}
