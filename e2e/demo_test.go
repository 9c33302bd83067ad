package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// TestDemoScreenshot regenerates docs/dashboard.png, the README's picture,
// from `agentbridge demo`. It runs only on request:
//
//	AGENTBRIDGE_SCREENSHOT=1 go test -run TestDemoScreenshot -v ./e2e
func TestDemoScreenshot(t *testing.T) {
	if os.Getenv("AGENTBRIDGE_SCREENSHOT") == "" {
		t.Skip("set AGENTBRIDGE_SCREENSHOT=1 to regenerate docs/dashboard.png")
	}
	ctx := newTab(t)
	home := t.TempDir()
	cmd := exec.Command(agentbridgeBin(t), "demo", "--loop")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config")}
	bridgetest.Exec(t, cmd) // up once it printed its dashboard URL
	// The demo is found as the README says: `agentbridge open --print`,
	// with no --addr.
	open := exec.Command(agentbridgeBin(t), "open", "--print")
	open.Env = cmd.Env
	b, err := open.Output()
	if err != nil {
		t.Fatalf("agentbridge open --print did not find the demo: %v", err)
	}
	u := strings.TrimSpace(string(b))
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatal(err)
	}
	colorScheme(t, ctx, "light")
	// Wait for a telling moment: several sessions, one of them needing you.
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](
		`document.querySelectorAll('tr.row').length >= 4 && !!document.querySelector('tr.row.attn') && !!document.querySelector('tr.row[data-status="running"] details.subs')`,
		chromedp.WithPollingTimeout(2*time.Minute), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		t.Fatalf("the demo never showed four sessions with one needing you: %v", err)
	}
	// Open a subagent tree, so the picture shows one.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`details.subs summary`))); err != nil {
		t.Logf("no subagent tree to open: %v", err)
	}
	time.Sleep(1200 * time.Millisecond) // let "in state" times tick past 0s
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(repoRoot, "docs", "dashboard.png")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", dst)
}
