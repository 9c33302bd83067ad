package proc

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// A table answers what the package asks about processes. procfs reads a
// proc file system (Linux's /proc, or a stand-in tree in tests); on macOS
// the system's own processes come from the kernel (sysctl). tableAt picks
// the table a root names (system_*.go).
type table interface {
	// pids lists the processes, in the table's order.
	pids() ([]int, error)
	// stat returns the process's parent and start; ErrNoProcess when it
	// does not exist.
	stat(pid int) (Stat, error)
	// exe is the path of the process's executable.
	exe(pid int) (string, error)
	// comm is the process's command name (which it may set).
	comm(pid int) (string, error)
	// cmdline is the process's arguments, each ended by a NUL.
	cmdline(pid int, limit int64) ([]byte, error)
	// cwd is the process's working directory.
	cwd(pid int) (string, error)
}

// procfs is a proc file system mounted at its value.
type procfs string

func (r procfs) dir(pid int) string { return string(r) + "/" + strconv.Itoa(pid) }

func (r procfs) pids() ([]int, error) {
	ents, err := os.ReadDir(string(r))
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out, nil
}

func (r procfs) stat(pid int) (Stat, error) {
	b, err := os.ReadFile(r.dir(pid) + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Stat{}, ErrNoProcess
		}
		return Stat{}, err
	}
	return parseStat(pid, b)
}

func (r procfs) exe(pid int) (string, error) {
	t, err := os.Readlink(r.dir(pid) + "/exe")
	return strings.TrimSuffix(t, " (deleted)"), err
}

func (r procfs) comm(pid int) (string, error) {
	b, err := readCapped(r.dir(pid)+"/comm", 64)
	return strings.TrimSpace(string(b)), err
}

func (r procfs) cmdline(pid int, limit int64) ([]byte, error) {
	return readCapped(r.dir(pid)+"/cmdline", limit)
}

func (r procfs) cwd(pid int) (string, error) { return os.Readlink(r.dir(pid) + "/cwd") }

// Cmdline returns the arguments of process pid under root (normally Root),
// each ended by a NUL as in /proc/<pid>/cmdline, at most limit bytes.
func Cmdline(root string, pid int, limit int64) ([]byte, error) {
	return tableAt(root).cmdline(pid, limit)
}
