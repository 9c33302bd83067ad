package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentbridge/agentbridge/validate"
	"github.com/spf13/pflag"
)

func init() {
	register("validate", "check a snapshot, reset, diagnostic or event: validate KIND FILE|-", func(_ context.Context, args []string, stdout, stderr io.Writer) error {
		return validateMain(args, os.Stdin, stdout, stderr)
	})
}

// maxValidateInput is the largest document validate reads, as the API's
// body limit.
const maxValidateInput = 1 << 20

// validateMain checks a document locally, with the bridge's own rules; no
// bridge needs to run. It prints one issue a line ("PATH CODE: MESSAGE") and
// returns errExit1 when there is any.
func validateMain(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("validate", pflag.ContinueOnError)
	harnesses := fs.StringSlice("harnesses", nil, "the enabled harness `ids` to check snapshots against (comma list; default: no harness check)")
	asJSON := fs.Bool("json", false, `print {"valid": bool, "issues": [...]}, as POST /v1/validate/{kind} answers`)
	if done, err := parseFlags(fs, args, stderr, "validate [flags] snapshot|reset|diagnostic|event FILE|-"); done || err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return errExit1
	}
	kind, name := fs.Arg(0), fs.Arg(1)
	check, ok := validate.Kinds[kind]
	if !ok {
		return fmt.Errorf("unknown kind %q: want snapshot, reset, diagnostic or event", kind)
	}
	raw, err := readInput(name, stdin)
	if err != nil {
		return err
	}
	var enabled validate.Harnesses
	if fs.Changed("harnesses") {
		enabled = validate.Harnesses{}
		for _, h := range *harnesses {
			if h = strings.TrimSpace(h); h != "" {
				enabled[h] = true
			}
		}
	}
	issues := check(raw, enabled)
	if *asJSON {
		if issues == nil {
			issues = []validate.Issue{}
		}
		b, err := json.MarshalIndent(struct {
			Valid  bool             `json:"valid"`
			Issues []validate.Issue `json:"issues"`
		}{len(issues) == 0, issues}, "", "  ")
		if err != nil {
			return fmt.Errorf("encode issues: %w", err)
		}
		if _, err := fmt.Fprintf(stdout, "%s\n", b); err != nil {
			return err
		}
	} else {
		var out strings.Builder
		for _, is := range issues {
			fmt.Fprintf(&out, "%s %s: %s\n", cell(is.Path), is.Code, cell(is.Message))
		}
		if len(issues) == 0 {
			out.WriteString("valid\n")
		}
		if _, err := io.WriteString(stdout, out.String()); err != nil {
			return err
		}
	}
	if len(issues) > 0 {
		return errExit1
	}
	return nil
}

// readInput reads the named file, or stdin for "-", refusing more than
// maxValidateInput bytes.
func readInput(name string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read input: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxValidateInput+1))
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	if len(b) > maxValidateInput {
		return nil, fmt.Errorf("input is over %d bytes (1 MiB), the bridge's limit", maxValidateInput)
	}
	return b, nil
}
