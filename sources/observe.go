package sources

import (
	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
)

// ExitedByHolder is what a source whose sessions learn their process only
// from the process holding the journal open (BindHolder, Holder)
// observes of "exited": the process, where the platform tells which
// process holds a file (Linux); unavailable where it cannot yet (macOS),
// and the sessions leave after the window instead.
func ExitedByHolder() agentbridge.Observe { return exitedByHolder(proc.HoldersKnown) }

func exitedByHolder(known bool) agentbridge.Observe {
	if !known {
		return agentbridge.Observe{How: agentbridge.Unavailable, From: "process (not on this platform: which process holds a journal open is not known)"}
	}
	return agentbridge.Observe{How: agentbridge.Observed, From: "process"}
}
