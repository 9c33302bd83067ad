package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: any YAML file loads or fails with an error, never a panic; a
// loaded config passes Validate.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("listen: 127.0.0.1:7391\npush:\n  - id: p\n    harnesses: [{id: h}]\n"))
	f.Add([]byte("history:\n  enabled: true\n  retention: 30d\n  file: h.db\n  prices:\n    - {model: \"gpt-5*\", input: 1.25, output: 10, cacheRead: 0.125}\n"))
	f.Fuzz(func(t *testing.T, yaml []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, yaml, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(nil, []string{"HOME=" + dir, "AGENTBRIDGE_CONFIG=" + path})
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Load accepted a config that Validate refuses: %v", err)
		}
	})
}
