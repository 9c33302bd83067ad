package service

import (
	"testing"
)

// FuzzDefinition: whatever sits in the definition's file (it is in the
// user's home, so anything), reading it back never panics; and for any
// binary path a definition can hold, the unit and the plist written for
// it are intact and name exactly that path.
func FuzzDefinition(f *testing.F) {
	for _, s := range []string{
		"/home/ada/.local/bin/agentbridge",
		`/home/ada/my tools/"x"/100%/a\b/agentbridge`,
		"/Users/ada/bin & tools/<agentbridge>",
		"/opt/agentbridge]]></string><string>--addr=0.0.0.0",
		"/x/agentbridge\" serve\nExecStartPre=/bin/evil",
		"",
		"/opt/\uFFFE/agentbridge",
		"/opt/\xff/agentbridge",
	} {
		f.Add(s)
	}
	unit, _ := Unit("/a")
	f.Add(string(unit))
	f.Fuzz(func(t *testing.T, s string) {
		for _, plist := range []bool{false, true} {
			definedBinary([]byte(s), plist)
		}
		intactDefinition([]byte(s))

		u, err := Unit(s)
		if err != nil {
			if isPrintableASCII(s) {
				t.Fatalf("Unit refused a printable path %q: %v", s, err)
			}
			return // a control character, not UTF-8, not XML text: refused
		}
		if !intactDefinition(u) {
			t.Fatalf("the unit for %q is not intact:\n%s", s, u)
		}
		if got := definedBinary(u, false); got != s {
			t.Fatalf("the unit for %q starts %q:\n%s", s, got, u)
		}
		p, err := Plist(s, "/Users/a/Library/Logs/agentbridge.log")
		if err != nil {
			t.Fatalf("Plist(%q): %v", s, err)
		}
		if !intactDefinition(p) {
			t.Fatalf("the plist for %q is not intact:\n%s", s, p)
		}
		if got := definedBinary(p, true); got != s {
			t.Fatalf("the plist for %q starts %q:\n%s", s, got, p)
		}
	})
}

func isPrintableASCII(s string) bool {
	for _, r := range s {
		if r < ' ' || r > '~' {
			return false
		}
	}
	return true
}
