package codex

import (
	"strconv"
)

// lineID is the id of a record that names none: a prefix and the record's
// 1-based line number in its rollout, which stays the same on every read of
// the same file.
func lineID(prefix string, line int) string {
	return prefix + "-" + strconv.Itoa(line)
}
