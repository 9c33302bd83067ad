package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileKey names a file by device and inode, whatever path reaches it.
type FileKey struct{ Dev, Ino uint64 }

// OpenFiles makes one pass over root/*/fd and returns, for each file some
// other process holds open whose target path passes match (nil: every
// path-named target), the pids holding it. The bridge's own process,
// processes that end meanwhile and processes it may not inspect are
// skipped. Its cost grows with the number of open descriptors on the
// machine, so call it once per scan, never on a timer.
func OpenFiles(root string, match func(target string) bool) (map[FileKey][]int, error) {
	return openFiles(root, match, nil)
}

// Writers is OpenFiles restricted to the agent's writers: descriptors open
// for writing (O_WRONLY or O_RDWR, from /proc/<pid>/fdinfo) by processes
// that agent matches. Readers (tail -f, less, cp, an editor's buffer) are
// never listed.
func Writers(root string, match func(target string) bool, agent Agent) (map[FileKey][]int, error) {
	return openFiles(root, match, writers(root, agent))
}

// writers returns the descriptor filter of Writers; it inspects each
// process once per pass.
func writers(root string, agent Agent) func(pid int, fd string) bool {
	lastPID, lastOK := 0, false
	return func(pid int, fd string) bool {
		if !openForWriting(root, pid, fd) {
			return false
		}
		if pid != lastPID {
			lastPID, lastOK = pid, agent.Match(root, pid)
		}
		return lastOK
	}
}

func openFiles(root string, match func(target string) bool, keep func(pid int, fd string) bool) (map[FileKey][]int, error) {
	out := map[FileKey][]int{}
	err := eachFD(root, func(pid int, fd, link, target string) {
		if match != nil && !match(target) {
			return
		}
		if keep != nil && !keep(pid, fd) {
			return
		}
		fi, err := os.Stat(link)
		if err != nil {
			return
		}
		if k, ok := KeyOf(fi); ok {
			if ps := out[k]; len(ps) == 0 || ps[len(ps)-1] != pid {
				out[k] = append(ps, pid)
			}
		}
	})
	return out, err
}

// FindHolders returns the pids of the processes other than this one that
// hold the file at path open, in ascending order, from one pass over
// root/*/fd (run it once when a journal appears, not on a timer).
// Descriptors are compared by device and inode, among those whose target
// has the file's base name.
func FindHolders(root, path string) ([]int, error) {
	return findHolders(root, path, nil)
}

// FindWriters is FindHolders restricted to the agent's writers (see
// Writers): the processes agent matches that hold the file open for
// writing.
func FindWriters(root, path string, agent Agent) ([]int, error) {
	return findHolders(root, path, writers(root, agent))
}

func findHolders(root, path string, keep func(pid int, fd string) bool) ([]int, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("proc: find holders: %w", err)
	}
	key, ok := KeyOf(fi)
	if !ok {
		return nil, nil
	}
	// Only descriptors whose target has the same base name are stat'ed: a
	// readlink is cheap, a stat of every open file on the machine is not.
	// (A journal renamed after it was opened keeps its base name in
	// practice; see OpenFiles for other matches.)
	base := filepath.Base(path)
	var pids []int
	err = eachFD(root, func(pid int, fd, link, target string) {
		if len(pids) > 0 && pids[len(pids)-1] == pid {
			return
		}
		if filepath.Base(strings.TrimSuffix(target, " (deleted)")) != base {
			return
		}
		fi, err := os.Stat(link)
		if err != nil {
			return
		}
		if keep != nil && !keep(pid, fd) {
			return
		}
		if k, ok := KeyOf(fi); ok && k == key {
			pids = append(pids, pid)
		}
	})
	return pids, err
}

// eachFD calls f for every descriptor of every other process whose target
// is a path (not a socket, pipe or anonymous inode), pids in ascending
// order. fd is the descriptor's number, link is root/<pid>/fd/<fd>; target
// what it points to.
func eachFD(root string, f func(pid int, fd, link, target string)) error {
	if _, ok := tableAt(root).(procfs); !ok {
		return fmt.Errorf("proc: list open files: %w", errors.ErrUnsupported)
	}
	d, err := os.Open(root)
	if err != nil {
		return fmt.Errorf("proc: list processes: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("proc: list processes: %w", err)
	}
	self := os.Getpid()
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 && pid != self {
			pids = append(pids, pid)
		}
	}
	sortInts(pids)
	for _, pid := range pids {
		dir := filepath.Join(root, strconv.Itoa(pid), "fd")
		fd, err := os.Open(dir)
		if err != nil {
			continue // gone, or not ours to inspect
		}
		fds, _ := fd.Readdirnames(-1)
		fd.Close()
		for _, n := range fds {
			link := dir + "/" + n
			target, err := os.Readlink(link)
			if err != nil || !strings.HasPrefix(target, "/") {
				continue
			}
			f(pid, n, link, target)
		}
	}
	return nil
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
