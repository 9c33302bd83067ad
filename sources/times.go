package sources

import "time"

// Millis returns the epoch milliseconds of an agent's RFC 3339 record
// timestamp, or 0 when it is missing, malformed or before 1970: the
// occurredAt of an event, which is only set from the agent's own clock.
func Millis(ts string) int64 {
	if ts == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || t.UnixMilli() < 0 {
		return 0
	}
	return t.UnixMilli()
}
