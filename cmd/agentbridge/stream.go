package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentbridge/agentbridge/client"
)

func newStreamCmd(a *app) *cobra.Command {
	var sf streamFlags
	cmd := &cobra.Command{
		Use:   "stream",
		Short: "print the local bridge's event stream on stdout as JSON lines (one connection)",
		Long: `Print the event stream of the bridge on this machine on standard output, one
JSON line {"id", "event", "data"} per event and a blank line per heartbeat,
until the bridge ends the stream or stops; then exit (0 when the bridge
ended it, 1 on an error). --since resumes after an event id: the bridge
replays what followed it, or starts again with resets.

It is what another machine's bridge runs over SSH to follow this one
(config remotes: [{id, ssh: host}] there runs "ssh host agentbridge stream"),
so that nothing listens on this machine beyond its loopback. Unlike watch it
never reconnects by itself: the follower on the other end resumes, and
learns from the end of the stream that this bridge is out of reach.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, so, err := sf.options(cmd, a.env)
			if err != nil {
				return err
			}
			return stream(cmd.Context(), c, so, a.stdout)
		},
	}
	sf.register(cmd)
	return cmd
}

// stream copies one connection of the stream to stdout as JSON lines,
// flushing each event and each heartbeat as it comes.
func stream(ctx context.Context, c *client.Client, so client.StreamOptions, stdout io.Writer) error {
	s, err := c.Open(ctx, so)
	if err != nil {
		return err
	}
	defer s.Close()
	out := bufio.NewWriterSize(stdout, 64<<10)
	var werr error
	s.Ping = func() {
		if werr == nil {
			if _, werr = out.WriteString("\n"); werr == nil {
				werr = out.Flush()
			}
		}
	}
	for {
		ev, err := s.Next()
		if werr != nil {
			return errWrite{werr}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("stream: %w", err)
		}
		if err := printEvent(out, ev); err != nil {
			return err
		}
	}
}
