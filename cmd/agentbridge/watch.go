package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/spf13/pflag"

	"github.com/agentbridge/agentbridge/client"
)

func init() {
	register("watch", "follow the event stream as JSON lines, resuming after a drop", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return watchMain(ctx, args, os.Environ(), stdout, stderr, client.DefaultBackoff)
	})
}

// errLimit ends the watch once --limit events are printed.
var errLimit = errors.New("limit reached")

// errWrite is a failure to print; it ends the watch.
type errWrite struct{ err error }

func (e errWrite) Error() string { return "write: " + e.err.Error() }
func (e errWrite) Unwrap() error { return e.err }

// watchMain follows the stream and prints each event as one JSON line
// {"id","event","data"}. Only a first connection that fails, an answer that
// asking again cannot fix (a 4xx) or a failed write ends it with an error;
// a drop is reported once on stderr and resumed after the last event
// printed.
func watchMain(ctx context.Context, args, env []string, stdout, stderr io.Writer, bo client.Backoff) error {
	fs := pflag.NewFlagSet("watch", pflag.ContinueOnError)
	clientFlags(fs)
	var filter filterFlags
	filter.register(fs)
	since := fs.Uint64("since", 0, "resume after this event `id` (the bridge replays what followed it, or sends resets)")
	limit := fs.Int("limit", 0, "stop after `n` events (0: follow until interrupted)")
	if done, err := parseFlags(fs, args, stderr, "watch [flags]"); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *limit < 0 {
		return fmt.Errorf("--limit: %d is negative", *limit)
	}
	q := url.Values{}
	if err := filter.query(q); err != nil {
		return err
	}
	c, err := newClient(fs, env)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	n, lost := 0, false
	o := client.FollowOptions{
		StreamOptions: client.StreamOptions{Query: q, Format: client.NDJSON, Since: *since},
		Backoff:       bo,
		OnConnect: func(bool) {
			if lost {
				fmt.Fprintf(stderr, "agentbridge watch: reconnected\n")
				lost = false
			}
		},
		OnDrop: func(err error) {
			if !lost {
				fmt.Fprintf(stderr, "agentbridge watch: %v; resuming\n", err)
				lost = true
			}
		},
	}
	err = c.Follow(ctx, o, func(ev client.Event) error {
		line, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode event %d: %w", ev.ID, err)
		}
		line = append(line, '\n')
		if _, err := out.Write(line); err != nil {
			return errWrite{err}
		}
		if err := out.Flush(); err != nil {
			return errWrite{err}
		}
		if n++; *limit > 0 && n >= *limit {
			return errLimit
		}
		return nil
	})
	if errors.Is(err, errLimit) || ctx.Err() != nil {
		return nil
	}
	return err
}
