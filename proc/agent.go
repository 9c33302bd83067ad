package proc

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Agent says which processes are an agent's own, from what /proc tells of
// them. The zero Agent (no Names) matches every process: for an agent
// whose executable is not known.
//
// A process matches when
//
//   - the base name of its executable (/proc/<pid>/exe) or its command
//     name (/proc/<pid>/comm, which a process may set, e.g. Node's
//     process.title) is one of Names, or one of Names followed by "-" and
//     more (a release binary such as "codex-x86_64-unknown-linux-musl",
//     whose command name the kernel cuts to 15 bytes; not when Exact: an
//     agent whose helpers are named so, e.g. kiro-cli-chat); or
//   - its executable lies in a directory named one of Packages (the
//     agent's npm package, e.g. …/claude-code/bin/claude.exe); or
//   - its executable is a native build kept per version, <dir>/versions/<v>,
//     in a directory <dir> named one of Versions (…/claude/versions/2.1.3);
//     any other executable inside a directory of that name is not; or
//   - its executable's base name is one of Runtimes (e.g. "node", "bun")
//     and its script (the first argument after the runtime's options) has
//     a Name as its base name, extension aside ("codex.js"), or one of
//     Packages or Scripts as a directory on its path
//     ("…/@openai/codex/bin/codex.js", "…/@github/copilot/index.js").
type Agent struct {
	Names    []string // executable or command names, e.g. "codex"
	Runtimes []string // interpreters the agent may run under, e.g. "node"
	Packages []string // directories naming the agent's package, e.g. "claude-code"
	Versions []string // directories keeping one native build per version, e.g. "claude"
	Scripts  []string // directories naming the package of the agent's script only, e.g. "copilot"
	Exact    bool     // Names match only whole (no "name-…" release builds)
}

// Any reports whether a matches every process (it names no executable).
func (a Agent) Any() bool { return len(a.Names) == 0 }

// Match reports whether process pid under root (normally Root) is the
// agent's. A process that ended or cannot be inspected does not match
// (unless a is Any).
func (a Agent) Match(root string, pid int) bool {
	if a.Any() {
		return true
	}
	t := tableAt(root)
	exe, exeDir := "", ""
	if p, err := t.exe(pid); err == nil && p != "" {
		exe, exeDir = filepath.Base(p), filepath.Dir(p)
	}
	if a.named(exe) || a.inPackage(exeDir) || a.versioned(exeDir) {
		return true
	}
	if comm, err := t.comm(pid); err == nil && a.named(comm) {
		return true
	}
	if !slices.Contains(a.Runtimes, exe) {
		return false
	}
	cmdline, err := t.cmdline(pid, 4096)
	if err != nil {
		return false
	}
	return a.matchScript(cmdline)
}

// versioned reports whether an executable's directory is <dir>/versions
// with dir one of Versions.
func (a Agent) versioned(exeDir string) bool {
	return filepath.Base(exeDir) == "versions" && slices.Contains(a.Versions, filepath.Base(filepath.Dir(exeDir)))
}

// named reports whether an executable or command name is one of Names, or
// one of them followed by "-" and more.
func (a Agent) named(name string) bool {
	for _, n := range a.Names {
		if name == n || (!a.Exact && strings.HasPrefix(name, n+"-")) {
			return true
		}
	}
	return false
}

// matchScript reports whether a runtime's command line (NUL-separated, as
// in /proc/<pid>/cmdline) runs the agent's script.
func (a Agent) matchScript(cmdline []byte) bool {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) < 2 {
		return false
	}
	script := ""
	for _, s := range args[1:] {
		if s != "" && !strings.HasPrefix(s, "-") {
			script = s
			break
		}
	}
	if script == "" {
		return false
	}
	base := filepath.Base(script)
	if ext := filepath.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	return slices.Contains(a.Names, base) || a.inPackage(filepath.Dir(script)) || inDirs(a.Scripts, filepath.Dir(script))
}

// inPackage reports whether a directory on path is one of Packages.
func (a Agent) inPackage(path string) bool { return inDirs(a.Packages, path) }

// inDirs reports whether a directory on path is one of dirs.
func inDirs(dirs []string, path string) bool {
	for _, d := range strings.Split(filepath.ToSlash(path), "/") {
		if d != "" && slices.Contains(dirs, d) {
			return true
		}
	}
	return false
}

// readCapped reads at most limit bytes of a /proc file.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// openForWriting reports whether descriptor fd of pid under root is open
// for writing (O_WRONLY or O_RDWR), from /proc/<pid>/fdinfo/<fd>.
func openForWriting(root string, pid int, fd string) bool {
	b, err := readCapped(root+"/"+strconv.Itoa(pid)+"/fdinfo/"+fd, 512)
	if err != nil {
		return false
	}
	flags, ok := fdinfoFlags(b)
	return ok && flags&accessMode != readOnly
}

// The access mode bits of open(2)'s flags.
const (
	accessMode = 0o3 // O_ACCMODE
	readOnly   = 0o0 // O_RDONLY
)

// fdinfoFlags returns the "flags:" field of an fdinfo file (octal).
func fdinfoFlags(b []byte) (uint64, bool) {
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		v, ok := bytes.CutPrefix(line, []byte("flags:"))
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 64)
		return n, err == nil
	}
	return 0, false
}
