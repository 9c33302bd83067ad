//go:build !unix

package sources

import (
	"errors"
	"os"
)

// openJournal are the flags a journal is opened with besides O_RDONLY:
// none on this platform.
const openJournal = 0

// errHoleToEnd is never returned here.
var errHoleToEnd = errors.New("hole to the end of the file")

// seekData cannot find holes on this platform: the bytes are read.
func seekData(*os.File, int64) (int64, error) { return 0, errors.ErrUnsupported }
