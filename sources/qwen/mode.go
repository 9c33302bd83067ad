package qwen

import (
	"bytes"
	"path/filepath"
	"regexp"

	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// Qwen Code's approval modes (tools.approvalMode, --approval-mode).
const (
	ModeDefault  = "default"   // ask before edits, shell commands, fetches, subagents
	ModePlan     = "plan"      // plan only; asks like default
	ModeAutoEdit = "auto-edit" // edits run without asking
	ModeAuto     = "auto"      // a model decides (0.24's default): what it asks is not known
	ModeYOLO     = "yolo"      // nothing asks
)

// asks reports whether tool asks the user before it runs in mode. A mode
// the bridge does not know, auto included, infers no approvals: a wait
// shown for a tool that runs is worse than one not shown.
func asks(tool, mode string) bool {
	switch mode {
	case ModeDefault, ModePlan:
		return asksApproval[tool]
	case ModeAutoEdit:
		return asksApproval[tool] && !edits[tool]
	}
	return false
}

// edits are the tools auto-edit mode runs without asking.
var edits = map[string]bool{"edit": true, "write_file": true, "notebook_edit": true}

// modeSetting finds tools.approvalMode in a settings.json (which may hold
// comments, so it is not decoded).
var modeSetting = regexp.MustCompile(`"approvalMode"\s*:\s*"([a-z-]+)"`)

// settingsMode returns the approval mode a settings file sets, "" if none.
func settingsMode(data []byte) string {
	if m := modeSetting.FindSubmatch(data); m != nil && known(string(m[1])) {
		return string(m[1])
	}
	return ""
}

// argvMode returns the approval mode a command line (NUL-separated, as
// /proc/<pid>/cmdline) sets with --yolo, -y or --approval-mode, "" if
// none.
func argvMode(cmdline []byte) string {
	args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	mode := ""
	for i, a := range args {
		switch {
		case string(a) == "--yolo" || string(a) == "-y":
			mode = ModeYOLO
		case string(a) == "--approval-mode" && i+1 < len(args) && known(string(args[i+1])):
			mode = string(args[i+1])
		case bytes.HasPrefix(a, []byte("--approval-mode=")) && known(string(a[len("--approval-mode="):])):
			mode = string(a[len("--approval-mode="):])
		}
	}
	return mode
}

func known(mode string) bool {
	switch mode {
	case ModeDefault, ModePlan, ModeAutoEdit, ModeAuto, ModeYOLO:
		return true
	}
	return false
}

// approvalMode works out the mode the session's TUI started in: its
// command line (the runtime file's pid), else the workspace's
// .qwen/settings.json (the runtime file's work_dir), else the user's
// settings.json, else Qwen's default, auto. A mode switched in the TUI
// (Shift+Tab) is written nowhere.
func (h *handler) approvalMode(id string) string {
	rt, ok := h.pids[id]
	if ok {
		if m := argvMode(readCmdline(rt.PID)); m != "" {
			return m
		}
		if wd := validate.CleanCwd(rt.WorkDir); wd != "" {
			if m := readSettingsMode(filepath.Join(wd, ".qwen", "settings.json")); m != "" {
				return m
			}
		}
	}
	if m := readSettingsMode(filepath.Join(filepath.Dir(h.root), "settings.json")); m != "" {
		return m
	}
	return ModeAuto
}

func readSettingsMode(path string) string {
	data, err := sources.ReadSmall(path, sources.LimitSidecar)
	if err != nil {
		return ""
	}
	return settingsMode(data)
}

// readCmdline reads the process's arguments (/proc/<pid>/cmdline),
// capped; nil when it cannot.
func readCmdline(pid int) []byte {
	if pid <= 0 || pid > validate.MaxPID {
		return nil
	}
	b, _ := proc.Cmdline(proc.Root, pid, 64<<10)
	return b
}
