package install

import (
	"strconv"
	"strings"
)

// Mark is the argument that marks a hook command as one install wrote:
// install, uninstall and status only ever touch a handler whose command is
// exactly Command(prog, source) for some program, never a user's own
// command however similar ("~/bin/log.sh hook claude-code",
// "agentbridge hook claude-code" typed by hand). `agentbridge hook`
// accepts and ignores it.
const Mark = "--by=hooks-install"

// Command is the hook command line for a source run by the program at
// prog: "'/opt/my tools/agentbridge' hook --by=hooks-install claude-code",
// quoted for sh.
func Command(prog, source string) string {
	return shellQuote(prog) + " hook " + Mark + " " + source
}

// AnswerCommand is the PermissionRequest hook command that waits up to
// wait seconds for an answer given through the bridge: "… hook
// --by=hooks-install --answer=300 claude-code".
func AnswerCommand(prog, source string, wait int) string {
	return shellQuote(prog) + " hook " + Mark + " --answer=" + strconv.Itoa(wait) + " " + source
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+@:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ours reports whether a hook command is exactly one install writes for
// source (Command of some program), and returns the program it runs.
func ours(cmd, source string) (prog string, ok bool) {
	prog, _, ok = oursAnswer(cmd, source)
	return prog, ok
}

// oursAnswer is ours that also returns the wait of an AnswerCommand (0
// for a Command).
func oursAnswer(cmd, source string) (prog string, wait int, ok bool) {
	rest, found := strings.CutSuffix(cmd, " "+source)
	if !found {
		return "", 0, false
	}
	if i := strings.LastIndex(rest, " --answer="); i >= 0 && strings.HasSuffix(rest[:i], " hook "+Mark) {
		n, err := strconv.Atoi(rest[i+len(" --answer="):])
		if err != nil || n <= 0 || strconv.Itoa(n) != rest[i+len(" --answer="):] {
			return "", 0, false
		}
		wait, rest = n, rest[:i]
	}
	rest, found = strings.CutSuffix(rest, " hook "+Mark)
	if !found || rest == "" {
		return "", 0, false
	}
	p, ok := unquote(rest)
	return p, wait, ok
}

// unquote undoes shellQuote.
func unquote(rest string) (prog string, ok bool) {
	prog = rest
	if rest[0] == '\'' {
		if len(rest) < 2 || rest[len(rest)-1] != '\'' {
			return "", false
		}
		prog = strings.ReplaceAll(rest[1:len(rest)-1], `'\''`, "'")
	}
	if shellQuote(prog) != rest {
		return "", false
	}
	return prog, true
}
