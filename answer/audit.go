package answer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/internal/smallfile"
)

// DefaultAuditMax bounds the audit log: past it, the log is moved to
// <file>.1 (replacing the one before) and a new one is begun.
const DefaultAuditMax = 1 << 20

// Results an audit record names.
const (
	ResultAccepted = "accepted" // the verdict went to the waiting hook
	ResultConflict = "conflict" // the wait was not open (409)
	ResultNoWait   = "no-wait"  // the bridge did not know the wait (404)
)

// Client says who answered: how it signed in and what it said it is.
type Client struct {
	Auth      string `json:"auth"`                // "token", "cookie" or "none" (auth off)
	Addr      string `json:"addr,omitempty"`      // the peer's address
	UserAgent string `json:"userAgent,omitempty"` // bounded
	Origin    string `json:"origin,omitempty"`
}

// Record is one line of the audit log.
type Record struct {
	At        int64  `json:"at"` // epoch ms
	Client    Client `json:"client"`
	Source    string `json:"source"`
	SessionID string `json:"sessionId"`
	WaitID    string `json:"waitId"`
	Decision  string `json:"decision"`
	Message   string `json:"message,omitempty"` // redacted, bounded
	Tool      string `json:"tool,omitempty"`    // as Answerable has it
	Request   string `json:"request,omitempty"` // as Answerable has it: redacted
	Result    string `json:"result"`
	State     string `json:"state,omitempty"` // a conflict's wait state
}

// Audit appends records to a JSONL file, bounded to Max bytes (then the
// file is moved to <file>.1).
type Audit struct {
	Path string
	Max  int64 // 0: DefaultAuditMax

	mu sync.Mutex
}

// Write appends r (At stamped when 0). The file is created 0600; a path
// that is not a regular file (a FIFO, a device, a symlink) is refused.
func (a *Audit) Write(r Record) error {
	if r.At == 0 {
		r.At = time.Now().UnixMilli()
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("answer: audit record: %w", err)
	}
	line = append(line, '\n')
	max := a.Max
	if max <= 0 {
		max = DefaultAuditMax
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(a.Path), 0o700); err != nil {
		return fmt.Errorf("answer: audit log: %w", err)
	}
	fi, err := os.Lstat(a.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("answer: audit log: %w", err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("answer: audit log %s is not a regular file", a.Path)
	case fi.Size()+int64(len(line)) > max:
		if err := os.Rename(a.Path, a.Path+".1"); err != nil {
			return fmt.Errorf("answer: audit log rotation: %w", err)
		}
	}
	// O_NOFOLLOW and O_NONBLOCK: what replaced the file since the check
	// (a symlink, a FIFO) is neither followed nor waited on
	f, err := os.OpenFile(a.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|smallfile.OpenFlags, 0o600)
	if err != nil {
		return fmt.Errorf("answer: audit log: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("answer: audit log %s is not a regular file", a.Path)
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("answer: audit log: %w", err)
	}
	return nil
}
