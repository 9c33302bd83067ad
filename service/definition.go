package service

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// unitTemplate is the systemd user unit; %s is ExecStart's quoted binary.
const unitTemplate = `# agentbridge as a systemd user service, written by ` + "`agentbridge service install`" + `:
# it starts at login and serves on 127.0.0.1:7391 until logout.
#   journalctl --user -u agentbridge -f    # its log (the address, never the token)
#   agentbridge open                        # the dashboard, signed in
# A user service does not see your shell's environment: put KEY=value lines
# (CLAUDE_CONFIG_DIR, CODEX_HOME …) in ~/.config/agentbridge/env.

[Unit]
Description=agentbridge: live AI coding agent sessions over HTTP and SSE
Documentation=https://github.com/agentbridge/agentbridge/blob/main/docs/install.md

[Service]
Type=exec
ExecStart=%s serve
EnvironmentFile=-%%h/.config/agentbridge/env
Restart=on-failure
RestartSec=2s
TimeoutStopSec=10s
# The token file must be readable by you alone.
UMask=0077
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX

[Install]
WantedBy=default.target
`

// checkPath refuses a binary path a definition cannot hold: a control
// character (a newline would end ExecStart), bytes that are not UTF-8 or
// characters XML cannot carry (the plist).
func checkPath(p string) error {
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return fmt.Errorf("service: the binary path %q holds a control character", p)
	}
	if !utf8.ValidString(p) || strings.IndexFunc(p, func(r rune) bool { return r == 0xFFFE || r == 0xFFFF }) >= 0 {
		return fmt.Errorf("service: the binary path %q is not valid text for a unit or a plist", p)
	}
	return nil
}

// Unit is the systemd user unit that serves with binary. The path is
// quoted for ExecStart (spaces, quotes, backslashes) and its % signs
// doubled, so systemd runs exactly that file.
func Unit(binary string) ([]byte, error) {
	if err := checkPath(binary); err != nil {
		return nil, err
	}
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`).Replace(binary)
	u := fmt.Appendf(nil, unitTemplate, `"`+q+`"`)
	return seal(u, len(u), "# ", ""), nil
}

// Plist is the launchd agent that serves with binary, its log in logFile.
func Plist(binary, logFile string) ([]byte, error) {
	if err := checkPath(binary); err != nil {
		return nil, err
	}
	if err := checkPath(logFile); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	esc := func(s string) string {
		var e bytes.Buffer
		xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- agentbridge as a launchd agent, written by agentbridge service install:
     it starts at login and serves on 127.0.0.1:7391. -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>%s</string>
	<key>ProgramArguments</key>
	<array>
		<string>%s</string>
		<string>serve</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ProcessType</key>
	<string>Background</string>
	<key>Umask</key>
	<integer>63</integer>
	<key>StandardErrorPath</key>
	<string>%s</string>
</dict>
</plist>
`, Label, esc(binary), esc(logFile))
	// The checksum goes inside the document, before its root element.
	return seal(b.Bytes(), bytes.Index(b.Bytes(), []byte("<plist ")), "<!-- ", " -->"), nil
}

// seal puts a checksum line into def at offset at (the start of a line):
// the SHA-256 of def without that line, so that install and uninstall
// tell a definition as agentbridge wrote it from one a user edited (and
// leave that one alone). open and close make the line a comment.
func seal(def []byte, at int, open, close string) []byte {
	sum := sha256.Sum256(def)
	line := open + checksumTag + hex.EncodeToString(sum[:]) + " (an edit makes agentbridge leave this file alone)" + close + "\n"
	return slices.Concat(def[:at], []byte(line), def[at:])
}

const checksumTag = "agentbridge-checksum sha256:"

// checksum finds a definition's checksum line.
var checksum = regexp.MustCompile(`(?m)^(?:# |<!-- )` + regexp.QuoteMeta(checksumTag) + `([0-9a-f]{64}) [^\n]*\n`)

// intactDefinition reports whether def holds one checksum line and it
// matches the rest of def.
func intactDefinition(def []byte) bool {
	m := checksum.FindAllSubmatchIndex(def, 2)
	if len(m) != 1 {
		return false
	}
	sum := sha256.Sum256(slices.Concat(def[:m[0][0]], def[m[0][1]:]))
	return hex.EncodeToString(sum[:]) == string(def[m[0][2]:m[0][3]])
}

var (
	execStart = regexp.MustCompile(`(?m)^ExecStart="((?:[^"\\]|\\.)*)" serve$`)
	program   = regexp.MustCompile(`<key>ProgramArguments</key>\s*<array>\s*<string>([^<]*)</string>`)
)

// definedBinary is the binary a unit (or plist) written by Unit (Plist)
// starts; "" when it names none that way.
func definedBinary(def []byte, plist bool) string {
	if plist {
		m := program.FindSubmatch(def)
		if m == nil {
			return ""
		}
		var s string
		if err := xml.Unmarshal(append(append([]byte("<s>"), m[1]...), "</s>"...), &s); err != nil {
			return ""
		}
		return s
	}
	m := execStart.FindSubmatch(def)
	if m == nil {
		return ""
	}
	return strings.NewReplacer(`\\`, `\`, `\"`, `"`, `%%`, `%`).Replace(string(m[1]))
}
