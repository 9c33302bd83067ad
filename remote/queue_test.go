package remote

import (
	"context"
	"testing"
)

// TestQueueBytes: the queue between a remote's reader and the hub is
// bounded in bytes: a record waits while the bytes queued and its own
// pass the bound and goes once enough are applied; a record larger than
// the whole bound goes alone into an empty queue.
func TestQueueBytes(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	if got := b.take(ctx, 60); got != 60 {
		t.Fatalf("take(60) = %d", got)
	}
	took := make(chan int64, 1)
	go func() { took <- b.take(ctx, 50) }()
	select {
	case n := <-took:
		t.Fatalf("a record of 50 bytes was queued beside 60 with a bound of 100 (%d)", n)
	default:
	}
	b.give(60)
	if n := <-took; n != 50 {
		t.Fatalf("take(50) after the queue drained = %d", n)
	}
	b.give(50)
	if n := b.take(ctx, 1<<30); n != 100 {
		t.Errorf("a record larger than the bound took %d, want the whole bound", n)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if n := b.take(cancelled, 1); n != -1 {
		t.Errorf("take on a full queue with its context ended = %d, want -1", n)
	}
}
