package fold_test

import (
	"fmt"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

func ExampleSession() {
	s := fold.NewSession("sess-1", "example-agent")
	for _, e := range []agentbridge.Event{
		{Kind: agentbridge.KindTurnStarted, TurnID: "t1", PromptText: "Fix tests"},
		{Kind: agentbridge.KindWaitStarted, WaitID: "w1", State: agentbridge.StatusWaiting, Reason: "Approve shell command"},
		{Kind: agentbridge.KindWaitFinished, WaitID: "w2"},
	} {
		if issues := s.Apply(e); issues != nil {
			fmt.Println("rejected:", issues[0].Path, issues[0].Code)
		}
	}
	snap := s.Snapshot()
	fmt.Println(snap.Title, "|", snap.Status, "|", snap.WaitingFor)
	// Output:
	// rejected: $.waitId invalid_id
	// Fix tests | waiting | Approve shell command
}
