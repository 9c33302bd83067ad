//go:build unix

package answer

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentbridge/agentbridge/internal/testenv"
)

func TestAuditRefusesWhatIsNotAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		testenv.Missing(t, "no FIFOs here: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, link} {
		if err := (&Audit{Path: p}).Write(Record{Result: ResultAccepted}); err == nil {
			t.Errorf("%s: written", filepath.Base(p))
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("the audit log followed a symlink")
	}
}
