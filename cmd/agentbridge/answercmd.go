package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/client"
)

func newAnswerCmd(a *app) *cobra.Command {
	var message string
	cmd := &cobra.Command{
		Use:   "answer SESSION allow|deny",
		Short: "answer a session's permission prompt: run the tool, or refuse it",
		Long: `Answer the permission prompt a session shows now, as its terminal would:
allow runs the tool, deny refuses it and tells the agent why (--message).
SESSION is SOURCE/ID, an id, or the start of one that names one session of
this bridge. It works only while the session's prompt is answerable: its
hook was installed with 'agentbridge hooks install --answer' and the bridge
runs with answering on (hooks.answer). A prompt answered meanwhile (at the
terminal, say) is refused with its state, never answered twice. A remote's
sessions are answered on that remote's own bridge.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.answer(cmd.Context(), cmd.Flags(), args[0], args[1], message)
		},
	}
	clientFlags(cmd.Flags())
	cmd.Flags().StringVarP(&message, "message", "m", "", "with deny: the reason the agent is given")
	return cmd
}

// answerEntry is a session as the answer command reads it.
type answerEntry struct {
	Source     string              `json:"source"`
	Host       string              `json:"host,omitempty"`
	Snapshot   struct{ ID string } `json:"snapshot"`
	Answerable *answer.Answerable  `json:"answerable,omitempty"`
}

func (a *app) answer(ctx context.Context, fs *pflag.FlagSet, session, decision, message string) error {
	if decision != answer.Allow && decision != answer.Deny {
		return usagef("the answer is allow or deny, not %q", decision)
	}
	if message != "" && decision != answer.Deny {
		return usagef("--message goes with deny")
	}
	c, err := newClient(fs, a.env)
	if err != nil {
		return err
	}
	var list struct {
		Sessions []answerEntry `json:"sessions"`
	}
	q := url.Values{"host": {"local"}}
	if err := c.GetJSON(ctx, "/v1/sessions", q, &list); err != nil {
		return err
	}
	e, err := pickSession(list.Sessions, session)
	if err != nil {
		return err
	}
	if e.Answerable == nil {
		return fmt.Errorf("%s/%s has no prompt to answer now (it is not waiting, or its hook was not installed with --answer, or answering is off on the bridge)", e.Source, cell(e.Snapshot.ID))
	}
	req := api.AnswerRequest{Decision: decision, Message: message}
	if err := postAnswer(ctx, c.Client, e.Source, e.Snapshot.ID, e.Answerable.WaitID, req); err != nil {
		return err
	}
	what := e.Answerable.Tool
	if e.Answerable.Request != "" {
		what += ": " + e.Answerable.Request
	}
	verb := map[string]string{answer.Allow: "allowed", answer.Deny: "denied"}[decision]
	fmt.Fprintf(a.stdout, "%s %s (%s/%s)\n", verb, cell(what), e.Source, cell(e.Snapshot.ID))
	return nil
}

// sessionPath is the API path of session id of source.
func sessionPath(source, id string) string {
	return "/v1/sessions/" + url.PathEscape(source) + "/" + url.PathEscape(id)
}

// postAnswer answers the wait waitID of session id of source with req.
func postAnswer(ctx context.Context, c *client.Client, source, id, waitID string, req api.AnswerRequest) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	path := sessionPath(source, id) + "/waits/" + url.PathEscape(waitID) + "/answer"
	resp, err := c.Do(ctx, http.MethodPost, path, nil, bytes.NewReader(body), "application/json")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// pickSession finds the one local session that SESSION names: SOURCE/ID,
// an id, or an id's start.
func pickSession(entries []answerEntry, session string) (answerEntry, error) {
	if session == "" {
		return answerEntry{}, usagef("name the session: SOURCE/ID, or an id")
	}
	var exact, prefix []answerEntry
	for _, e := range entries {
		if e.Host != "" {
			continue
		}
		switch {
		case session == e.Source+"/"+e.Snapshot.ID, session == e.Snapshot.ID:
			exact = append(exact, e)
		case strings.HasPrefix(e.Snapshot.ID, session):
			prefix = append(prefix, e)
		}
	}
	if len(exact) == 1 {
		return exact[0], nil
	}
	if len(exact) == 0 && len(prefix) == 1 {
		return prefix[0], nil
	}
	if len(exact)+len(prefix) == 0 {
		return answerEntry{}, fmt.Errorf("no session of this bridge is named %q (see 'agentbridge sessions')", cell(session))
	}
	return answerEntry{}, fmt.Errorf("%q names more than one session; give SOURCE/ID", cell(session))
}
