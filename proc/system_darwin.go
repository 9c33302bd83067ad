package proc

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"
)

// Root names the system's process table. macOS has no proc file system:
// Root stands for the kernel's table (sysctl kern.proc, kern.procargs2;
// the working directory through libproc), any other path for a proc-like
// tree (tests).
const Root = "/proc"

// HoldersKnown reports whether this platform tells which processes hold a
// file open (OpenFiles, FindHolders, Writers): not on macOS yet (it needs
// libproc's PROC_PIDLISTFDS); those calls return errors.ErrUnsupported
// there, and sources that bind a session to its process that way say so
// in their observes.
const HoldersKnown = false

func tableAt(root string) table {
	if root == Root {
		return kernel{}
	}
	return procfs(root)
}

// kernel is macOS's process table.
type kernel struct{}

func (kernel) pids() ([]int, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("proc: list processes: %w", err)
	}
	out := make([]int, 0, len(ks))
	for i := range ks {
		if pid := int(ks[i].Proc.P_pid); pid > 0 {
			out = append(out, pid)
		}
	}
	return out, nil
}

func (kernel) info(pid int) (*unix.KinfoProc, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || int(k.Proc.P_pid) != pid {
		// The kernel answers a pid it does not know with nothing.
		return nil, ErrNoProcess
	}
	return k, nil
}

func (t kernel) stat(pid int) (Stat, error) {
	k, err := t.info(pid)
	if err != nil {
		return Stat{}, err
	}
	tv := k.Proc.P_starttime
	return kinfoStat(pid, int(k.Eproc.Ppid), int64(tv.Sec), int64(tv.Usec)), nil
}

func (kernel) args(pid int) ([]byte, error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, ErrNoProcess
		}
		return nil, fmt.Errorf("proc: arguments of %d: %w", pid, err)
	}
	return b, nil
}

func (t kernel) exe(pid int) (string, error) {
	b, err := t.args(pid)
	if err != nil {
		return "", err
	}
	exe, _, err := parseProcArgs(b, 0)
	return exe, err
}

func (t kernel) comm(pid int) (string, error) {
	k, err := t.info(pid)
	if err != nil {
		return "", err
	}
	c := k.Proc.P_comm[:]
	if i := bytes.IndexByte(c, 0); i >= 0 {
		c = c[:i]
	}
	return string(c), nil
}

func (t kernel) cmdline(pid int, limit int64) ([]byte, error) {
	b, err := t.args(pid)
	if err != nil {
		return nil, err
	}
	_, args, err := parseProcArgs(b, limit)
	return args, err
}

func (kernel) cwd(pid int) (string, error) {
	p := process.Process{Pid: int32(pid)}
	dir, err := p.Cwd()
	if err != nil {
		return "", fmt.Errorf("proc: working directory of %d: %w", pid, err)
	}
	return dir, nil
}
