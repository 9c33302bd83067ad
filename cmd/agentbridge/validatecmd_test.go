package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "snapshot.json")
	writeFile(t, file, `{"id":"s1","harness":"codex","status":"running"}`, 0o600)
	big := filepath.Join(dir, "big.json")
	writeFile(t, big, `"`+strings.Repeat("a", maxValidateInput)+`"`, 0o600)

	tests := []struct {
		name      string
		args      []string
		stdin     string
		wantErr   error  // nil, errExit1, or any other error (errOther)
		wantOut   string // exact stdout, when wantCodes is empty
		wantCodes []string
		wantPaths []string
	}{
		{name: "valid snapshot from a file", args: []string{"snapshot", file}, wantOut: "valid\n"},
		{name: "valid snapshot from stdin", args: []string{"snapshot", "-"}, stdin: `{"id":"s1","harness":"codex","status":"idle"}`, wantOut: "valid\n"},
		{name: "every issue of a snapshot", args: []string{"snapshot", "-"},
			stdin:     `{"id":"bad id","harness":"codex","status":"sleeping","cwd":"rel/path","extra":1}`,
			wantErr:   errExit1,
			wantCodes: []string{"invalid_id", "invalid_enum", "invalid_path", "unknown_field"},
			wantPaths: []string{"$.id", "$.status", "$.cwd", "$.extra"}},
		{name: "switched-off harness", args: []string{"--harnesses", "claude-code", "snapshot", file},
			wantErr: errExit1, wantCodes: []string{"harness_not_enabled"}, wantPaths: []string{"$.harness"}},
		{name: "enabled harness", args: []string{"--harnesses", "claude-code,codex", "snapshot", file}, wantOut: "valid\n"},
		{name: "reset with a duplicate", args: []string{"reset", "-"},
			stdin:   `[{"id":"a","harness":"codex","status":"idle"},{"id":"a","harness":"codex","status":"idle"}]`,
			wantErr: errExit1, wantCodes: []string{"duplicate"}},
		{name: "diagnostic", args: []string{"diagnostic", "-"}, stdin: `{"code":"watch-failed","message":"the watch failed"}`, wantOut: "valid\n"},
		{name: "bad diagnostic code", args: []string{"diagnostic", "-"}, stdin: `{"code":"Watch Failed","message":"x"}`,
			wantErr: errExit1, wantCodes: []string{"invalid_id"}, wantPaths: []string{"$.code"}},
		{name: "the bridge takes a snapshot without pid and cwd", args: []string{"snapshot", "-"}, stdin: `{"id":"s1","harness":"codex","status":"idle"}`, wantOut: "valid\n"},
		{name: "the host does not", args: []string{"--host", "snapshot", "-"}, stdin: `{"id":"s1","harness":"codex","status":"idle"}`,
			wantErr: errExit1, wantCodes: []string{"invalid_integer", "invalid_string"}, wantPaths: []string{"$.pid", "$.cwd"}},
		{name: "the host takes an id the bridge does not", args: []string{"--host", "snapshot", "-"},
			stdin: `{"id":"a b/c","harness":"codex","pid":7,"cwd":"/w/./x","title":"tab\tin it"}`, wantOut: "valid\n"},
		{name: "the host profile on a reset", args: []string{"--host", "reset", "-"},
			stdin:   `[{"id":"a","harness":"codex","status":"done","pid":7,"cwd":"/w"}]`,
			wantErr: errExit1, wantCodes: []string{"invalid_enum"}, wantPaths: []string{"$[0].status"}},
		{name: "event", args: []string{"event", "-"}, stdin: `{"kind":"turn.started","turnId":"t1"}`, wantOut: "valid\n"},
		{name: "event missing its id", args: []string{"event", "-"}, stdin: `{"kind":"turn.started"}`,
			wantErr: errExit1, wantCodes: []string{"missing_field"}},
		{name: "not JSON", args: []string{"snapshot", "-"}, stdin: `{"id":`, wantErr: errExit1, wantPaths: []string{"$"}},
		{name: "unknown kind", args: []string{"session", file}, wantErr: errUsage},
		{name: "missing file", args: []string{"snapshot", filepath.Join(dir, "nope.json")}, wantErr: errOther},
		{name: "over 1 MiB", args: []string{"snapshot", big}, wantErr: errOther},
		{name: "no file named", args: []string{"snapshot"}, wantErr: errUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := validateMain(tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			switch {
			case tt.wantErr == errUsage:
				if !errors.As(err, new(usageError)) {
					t.Fatalf("err = %v, want a usage error", err)
				}
				return
			case tt.wantErr == errOther && (err == nil || err == errExit1):
				t.Fatalf("err = %v, want an explained error", err)
			case tt.wantErr != errOther && err != tt.wantErr:
				t.Fatalf("err = %v, want %v (stdout %q, stderr %q)", err, tt.wantErr, stdout.String(), stderr.String())
			}
			if tt.wantErr == errOther {
				return
			}
			if tt.wantCodes == nil && tt.wantPaths == nil {
				if tt.wantErr == nil && stdout.String() != tt.wantOut {
					t.Errorf("stdout = %q, want %q", stdout.String(), tt.wantOut)
				}
				return
			}
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			for _, c := range tt.wantCodes {
				if !hasLine(lines, func(l string) bool { return strings.Contains(l, " "+c+": ") }) {
					t.Errorf("no issue with code %s in:\n%s", c, stdout.String())
				}
			}
			for _, p := range tt.wantPaths {
				if !hasLine(lines, func(l string) bool { return strings.HasPrefix(l, p+" ") }) {
					t.Errorf("no issue at %s in:\n%s", p, stdout.String())
				}
			}
		})
	}
}

// errOther stands for any error but errExit1 in the table above.
var errOther = os.ErrInvalid

// errUsage stands for a usage error (exit status 2) in the table above.
var errUsage = os.ErrPermission

func hasLine(lines []string, f func(string) bool) bool {
	for _, l := range lines {
		if f(l) {
			return true
		}
	}
	return false
}

func TestValidateCommandJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := validateMain([]string{"--json", "snapshot", "-"}, strings.NewReader(`{"id":"s1","status":"idle"}`), &stdout, &stderr)
	if err != errExit1 {
		t.Fatalf("err = %v, want errExit1", err)
	}
	var got struct {
		Valid  bool `json:"valid"`
		Issues []struct {
			Path, Code, Message string
		} `json:"issues"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if got.Valid || len(got.Issues) != 1 || got.Issues[0].Path != "$.harness" || got.Issues[0].Code != "invalid_string" {
		t.Errorf("got %+v, want one invalid_string issue at $.harness (the host's code for a missing string)", got)
	}

	stdout.Reset()
	if err := validateMain([]string{"--json", "diagnostic", "-"}, strings.NewReader(`{"code":"ok","message":"fine"}`), &stdout, &stderr); err != nil {
		t.Fatalf("valid diagnostic: err = %v", err)
	}
	if want := "{\n  \"valid\": true,\n  \"issues\": []\n}\n"; stdout.String() != want {
		t.Errorf("stdout = %q, want %q", stdout.String(), want)
	}
}
