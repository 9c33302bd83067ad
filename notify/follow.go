package notify

import (
	"context"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// FollowHub hands every record of the hub's stream to fn, in order, from
// the state at the call on (first the resets of every source), until ctx
// ends. A subscription cut off for falling behind is opened again after
// the last record handed over: the hub replays what followed, or resets.
func FollowHub(ctx context.Context, h *hub.Hub, fn func(hub.Record)) {
	var last uint64
	resume := false
	for ctx.Err() == nil {
		sub := h.Subscribe(last, resume, agentbridge.Filter{})
		for _, r := range sub.Initial {
			fn(r)
			last = r.Rev
		}
		resume = true
	live:
		for {
			select {
			case <-ctx.Done():
				sub.Close()
				return
			case <-sub.Done:
				break live
			case r := <-sub.C:
				fn(r)
				last = r.Rev
			}
		}
		// Records queued before the cut-off are still in C.
		for {
			select {
			case r := <-sub.C:
				fn(r)
				last = r.Rev
				continue
			default:
			}
			break
		}
		sub.Close()
	}
}
