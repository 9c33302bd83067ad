package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/hooks"
)

// hookBudget bounds one run of `agentbridge hook`: it ends well within the
// one second an agent may be kept waiting, bridge up, slow or down.
const hookBudget = 900 * time.Millisecond

func newHookCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook SOURCE",
		Short: "pass an agent's hook payload (stdin) to the bridge; what `hooks install` registers",
		Long: `Read the JSON payload an agent gives its hook command on standard input and
post it, unchanged, to the running bridge (POST /v1/hooks/SOURCE), found as
the other client subcommands find it (--addr, AGENTBRIDGE_ADDR, the config;
the token from AGENTBRIDGE_TOKEN or the token file). SOURCE is claude-code,
codex, gemini or qwen.

It always exits 0 within a second and prints nothing: an agent reads a hook's
standard output as its decision, so a bridge that is down, slow or refusing
never blocks or changes the agent. Register it with 'agentbridge hooks
install' rather than by hand.

With --answer=SECONDS (what 'hooks install --answer' writes for the
PermissionRequest hook) a permission prompt waits up to SECONDS for an
answer given through the bridge (the dashboard, a notification, 'agentbridge
answer'), and prints the agent's decision: allow, or deny with the reason.
It prints nothing (no verdict: the agent's own prompt decides) when the
bridge does not hold the prompt within a second (down, slow, answering off),
when the prompt is answered at the terminal, when SECONDS pass, and when its
connection to the bridge ends (the bridge stopped or restarted).`,
		// flags are parsed here, not by cobra: a bad flag must not make
		// the command fail
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.hook(cmd.Context(), args)
			return nil
		},
	}
	return cmd
}

// hook runs `agentbridge hook`: every failure is silent.
func (a *app) hook(ctx context.Context, args []string) {
	start := time.Now()
	ctx, cancel := context.WithDeadline(ctx, start.Add(hookBudget))
	defer cancel()
	fs := pflag.NewFlagSet("hook", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	clientFlags(fs)
	fs.String("by", "", "") // install.Mark: who wrote the command, not read
	wait := fs.Int("answer", 0, "")
	if fs.Parse(args) != nil || fs.NArg() != 1 || !slices.Contains(hooks.Sources(), fs.Arg(0)) {
		return
	}
	source := fs.Arg(0)
	body, ok := readHookInput(ctx, a.stdin)
	if !ok {
		return
	}
	c, err := newClient(fs, a.env)
	if err != nil {
		return
	}
	secs := min(*wait, int(api.MaxWait/time.Second))
	if secs > 0 && isPermissionRequest(body) {
		// the whole wait, and then some for the verdict to arrive; the
		// bridge must hold the prompt (answer 200) within hookBudget
		var cancelWait context.CancelFunc
		ctx, cancelWait = context.WithDeadline(context.WithoutCancel(ctx), start.Add(time.Duration(secs)*time.Second+hookBudget))
		defer cancelWait()
	} else {
		secs = 0
	}
	reqCtx, cancelReq := context.WithCancel(ctx)
	defer cancelReq()
	late := time.AfterFunc(time.Until(start.Add(hookBudget)), cancelReq)
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, "http://"+c.Addr+"/v1/hooks/"+source, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.HookAtHeader, strconv.FormatInt(start.UnixMilli(), 10))
	if secs > 0 {
		req.Header.Set(api.WaitHeader, strconv.Itoa(secs))
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil || !late.Stop() {
		if resp != nil {
			resp.Body.Close()
		}
		return
	}
	defer resp.Body.Close()
	if secs == 0 || resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return
	}
	var v answer.Verdict
	if json.NewDecoder(io.LimitReader(resp.Body, 8192)).Decode(&v) != nil {
		return // the connection ended: no verdict
	}
	if out := decisionOutput(v); out != nil {
		a.stdout.Write(out)
	}
}

// isPermissionRequest reports whether a payload is a PermissionRequest
// hook's: the only one that may wait for an answer.
func isPermissionRequest(body []byte) bool {
	var p struct {
		Event string `json:"hook_event_name"`
	}
	return json.Unmarshal(body, &p) == nil && p.Event == "PermissionRequest"
}

// decisionOutput is what a PermissionRequest hook prints for a verdict, nil
// for none. Claude Code and Codex read the same shape (Codex's
// permission-request.command.output schema: behavior allow|deny, message).
func decisionOutput(v answer.Verdict) []byte {
	type decision struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message,omitempty"`
	}
	type specific struct {
		HookEventName string   `json:"hookEventName"`
		Decision      decision `json:"decision"`
	}
	d := decision{Behavior: v.Decision}
	switch v.Decision {
	case answer.Allow:
	case answer.Deny:
		d.Message = v.Message
		if d.Message == "" {
			d.Message = "Denied from agentbridge"
		}
	default:
		return nil
	}
	b, err := json.Marshal(struct {
		HookSpecificOutput specific `json:"hookSpecificOutput"`
	}{specific{"PermissionRequest", d}})
	if err != nil {
		return nil
	}
	return append(b, '\n')
}

// readHookInput reads the payload, at most one byte over the API's
// limit (the bridge then refuses it and says so), until ctx ends.
func readHookInput(ctx context.Context, r io.Reader) ([]byte, bool) {
	if r == nil {
		return nil, false
	}
	if f, ok := r.(*os.File); ok {
		if dl, ok := ctx.Deadline(); ok {
			_ = f.SetReadDeadline(dl) // a pipe honours it; a regular file needs none
		}
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, hooks.MaxPayload+1))
		done <- result{b, err}
	}()
	select {
	case res := <-done:
		return res.b, res.err == nil && len(bytes.TrimSpace(res.b)) > 0
	case <-ctx.Done():
		return nil, false
	}
}
