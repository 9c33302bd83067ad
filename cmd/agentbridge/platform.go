package main

import (
	"errors"
	"runtime"
)

// The decisions that differ between operating systems, made from the
// GOOS given so that each is tested on every platform.

// errUseWSL is what serve and demo say on Windows.
var errUseWSL = errors.New("agentbridge serves on Linux and macOS; on Windows, install and run it inside WSL (Windows Subsystem for Linux), where the agent CLIs keep their journals")

// servable reports whether the bridge can serve on goos: its sources
// need a process table and file watching it knows (Linux, macOS).
func servable(goos string) error {
	if goos == "windows" {
		return errUseWSL
	}
	return nil
}

// browserOpener is the command that opens a page in the desktop's browser
// when $BROWSER names none: open(1) on macOS, xdg-open in a Linux (or
// BSD) desktop session (display is true when DISPLAY or WAYLAND_DISPLAY
// is set); "" when there is none.
func browserOpener(goos string, display bool) string {
	switch {
	case goos == "darwin":
		return "open"
	case goos == "windows":
		return ""
	case display:
		return "xdg-open"
	}
	return ""
}

// goos is the operating system the binary runs on.
var goos = runtime.GOOS
