package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/client"
)

// demoAddrName is the file in the state directory where a running demo
// records the address it serves at, so that the client subcommands find it
// without --addr. The demo removes it when it stops; a file left behind by
// a demo that was killed is ignored once nothing answers at its address.
const demoAddrName = "demo-addr"

// demoAddrFile is the demo's address file in stateDir ("" when stateDir is).
func demoAddrFile(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Join(stateDir, demoAddrName)
}

// recordDemoAddr writes addr to the state directory's demo address file
// and returns the function that removes it again (when it still holds
// addr: a second demo may have replaced it).
func recordDemoAddr(stateDir, addr string) (remove func(), err error) {
	path := demoAddrFile(stateDir)
	if path == "" {
		return func() {}, errors.New("no state directory (HOME and XDG_STATE_HOME are unset)")
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return func() {}, fmt.Errorf("state directory: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o600); err != nil {
		return func() {}, fmt.Errorf("record the demo's address: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return func() {}, fmt.Errorf("record the demo's address: %w", err)
	}
	return func() {
		if got, ok := readDemoAddr(stateDir); ok && got == addr {
			os.Remove(path)
		}
	}, nil
}

// readDemoAddr reads the recorded demo address, refusing anything but a
// small regular file that holds a host:port.
func readDemoAddr(stateDir string) (string, bool) {
	path := demoAddrFile(stateDir)
	if path == "" {
		return "", false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openSmall, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return "", false
	}
	addr := strings.TrimSpace(string(b))
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", false
	}
	return addr, true
}

// runningDemo returns the recorded demo address when something answers
// there.
func runningDemo(stateDir string) (string, bool) {
	addr, ok := readDemoAddr(stateDir)
	if !ok {
		return "", false
	}
	d, err := client.DialAddr(addr)
	if err != nil {
		return "", false
	}
	c, err := net.DialTimeout("tcp", d, time.Second)
	if err != nil {
		return "", false
	}
	c.Close()
	return addr, true
}
