package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/text"
)

func newWatchCmd(a *app) *cobra.Command {
	var sf streamFlags
	var limit int
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "follow the event stream as JSON lines, resuming after a drop",
		Long: `Follow the bridge's event stream and print each event as one JSON line
{"id", "event", "data"}. It starts with a reset per source. When the
connection drops or the bridge restarts, watch says so on stderr, resumes
after the last id it printed and says "reconnected" once it is back, so no
event is lost and none is printed twice.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usagef("--limit: %d is negative", limit)
			}
			c, so, err := sf.options(cmd, a.env)
			if err != nil {
				return err
			}
			return watch(cmd.Context(), c, so, limit, a.stdout, a.stderr, a.backoff)
		},
	}
	sf.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 0, "stop after `n` events (0: follow until interrupted)")
	return cmd
}

// streamFlags are the flags of the commands that read the stream: the
// client's, the session filters and --since.
type streamFlags struct {
	filter filterFlags
	since  uint64
}

func (f *streamFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	clientFlags(fs)
	f.filter.register(fs)
	f.filter.complete(cmd)
	fs.Uint64Var(&f.since, "since", 0, "resume after this event `id` (the bridge replays what followed it, or sends resets)")
}

// options finds the bridge and says which stream to open (JSON lines).
func (f *streamFlags) options(cmd *cobra.Command, env []string) (*client.Client, client.StreamOptions, error) {
	q := url.Values{}
	if err := f.filter.query(q); err != nil {
		return nil, client.StreamOptions{}, err
	}
	c, err := newClient(cmd.Flags(), env)
	if err != nil {
		return nil, client.StreamOptions{}, err
	}
	return c.Client, client.StreamOptions{Query: q, Format: client.NDJSON, Since: f.since}, nil
}

// backoff is watch's reconnect delay (see client.Backoff).
type backoff = client.Backoff

// watchBackoff is what the command uses.
var watchBackoff = client.DefaultBackoff

// errLimit ends the watch once --limit events are printed.
var errLimit = errors.New("limit reached")

// errWrite is a failure to print; it ends the watch.
type errWrite struct{ err error }

func (e errWrite) Error() string { return "write: " + e.err.Error() }
func (e errWrite) Unwrap() error { return e.err }

// watch follows the stream (client.Follow) and prints each event as one
// JSON line {"id","event","data"} until ctx ends or limit events (0: no
// limit) are printed. A drop is reported once on stderr, then
// "reconnected" when a stream is back; only a first connection that fails,
// an answer that asking again cannot fix (a 4xx) or a failed write ends it
// with an error.
func watch(ctx context.Context, c *client.Client, so client.StreamOptions, limit int, stdout, stderr io.Writer, bo backoff) error {
	out := bufio.NewWriter(stdout)
	n := 0
	o := client.FollowOptions{StreamOptions: so, Backoff: bo}
	o.OnConnect, o.OnDrop = reportDrops("watch", stderr)
	err := c.Follow(ctx, o, func(ev client.Event) error {
		if err := printEvent(out, ev); err != nil {
			return err
		}
		if n++; limit > 0 && n >= limit {
			return errLimit
		}
		return nil
	})
	if errors.Is(err, errLimit) || ctx.Err() != nil {
		return nil
	}
	return err
}

// printEvent prints ev as one JSON line {"id","event","data"} and flushes
// it; a failed write is an errWrite. The line is the event exactly, with
// C1 controls and the characters that reorder or hide text escaped
// (text.EscapeJSON), so that a terminal shows them rather than acts.
func printEvent(out *bufio.Writer, ev client.Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event %d: %w", ev.ID, err)
	}
	line = append(text.EscapeJSON(line), '\n')
	if _, err := out.Write(line); err != nil {
		return errWrite{err}
	}
	if err := out.Flush(); err != nil {
		return errWrite{err}
	}
	return nil
}

// reportDrops makes a follower's OnConnect and OnDrop: a drop is reported
// once on stderr ("agentbridge <name>: <why>; resuming"), then
// "reconnected" when a stream is back.
func reportDrops(name string, stderr io.Writer) (onConnect func(bool), onDrop func(error)) {
	lost := false
	onConnect = func(bool) {
		if lost {
			fmt.Fprintf(stderr, "agentbridge %s: reconnected\n", name)
			lost = false
		}
	}
	onDrop = func(err error) {
		if !lost {
			fmt.Fprintf(stderr, "agentbridge %s: %v; resuming\n", name, err)
			lost = true
		}
	}
	return onConnect, onDrop
}
