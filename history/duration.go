package history

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseAge reads a length of time as the history's settings and queries
// write it: a Go duration ("12h", "90m", "1h30m") or a number of days
// ("7d", "90d"). It refuses a negative length, a bare number without a
// unit and days that overflow a time.Duration.
func ParseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && strings.Trim(days, "0123456789") == "" {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > math.MaxInt64/int64(24*time.Hour) {
			return 0, errors.New("too many days")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration; write e.g. 7d, 12h or 90m")
	}
	if d < 0 {
		return 0, errors.New("negative")
	}
	return d, nil
}
