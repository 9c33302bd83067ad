package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbridge/agentbridge/validate"
)

func newValidateCmd(a *app) *cobra.Command {
	var harnesses []string
	var asJSON, host bool
	cmd := &cobra.Command{
		Use:   "validate snapshot|reset|diagnostic|event FILE|-",
		Short: "check a snapshot, reset, diagnostic or event offline: validate KIND FILE|-",
		Long: `Check a snapshot, reset, diagnostic or event document (from FILE, or stdin
for -) offline: no bridge needs to run. By default a snapshot, reset or
diagnostic is checked by the bridge's rules (the Terminay host's, with pid and
cwd optional and a few stricter rules); --host checks it by the host's own
rules exactly (pid and cwd required, nothing stricter): what Terminay would
accept. Events are the bridge's own vocabulary either way. Every issue is
printed on a line of its own as "PATH CODE: message"; the exit status is 1
when there is any.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("want two arguments, KIND and FILE (or - for stdin), got %d", len(args))
			}
			if _, ok := validate.Kinds[args[0]]; !ok {
				return usagef("unknown kind %q: want snapshot, reset, diagnostic or event", args[0])
			}
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []string{"snapshot", "reset", "diagnostic", "event"}, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveDefault
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var enabled validate.Harnesses
			if cmd.Flags().Changed("harnesses") {
				enabled = validate.Harnesses{}
				for _, h := range harnesses {
					if h = strings.TrimSpace(h); h != "" {
						enabled[h] = true
					}
				}
			}
			prof := validate.Bridge
			if host {
				prof = validate.Host
			}
			return validateDoc(args[0], args[1], enabled, prof, asJSON, a.stdin, a.stdout)
		},
	}
	cmd.Flags().StringSliceVar(&harnesses, "harnesses", nil, "the enabled harness `ids` to check snapshots against (comma list; default: no harness check)")
	cmd.Flags().BoolVar(&host, "host", false, "check by the Terminay host's own rules (pid and cwd required), as POST /v1/validate/{kind}?profile=host does")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"valid": bool, "issues": [...]}, as POST /v1/validate/{kind} answers`)
	return cmd
}

// maxValidateInput is the largest document validate reads, as the API's
// body limit.
const maxValidateInput = 1 << 20

// validateDoc checks a document locally under a profile. It prints one
// issue a line ("PATH CODE: MESSAGE") and returns errExit1 when there is
// any.
func validateDoc(kind, name string, enabled validate.Harnesses, prof validate.Profile, asJSON bool, stdin io.Reader, stdout io.Writer) error {
	check := validate.Kinds[kind]
	raw, err := readInput(name, stdin)
	if err != nil {
		return err
	}
	issues := check(raw, enabled, prof)
	if asJSON {
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
