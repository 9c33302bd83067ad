package defaults

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{0, time.Second},
		{-time.Millisecond, time.Second},
		{time.Millisecond, time.Millisecond},
	} {
		v := c.in
		Positive(&v, time.Second)
		if v != c.want {
			t.Errorf("Positive(%v, 1s) = %v, want %v", c.in, v, c.want)
		}
	}
}
