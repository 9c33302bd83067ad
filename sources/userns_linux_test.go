package sources_test

import (
	"os"
	"syscall"
	"testing"
)

// newUserNamespace starts a child in a user namespace of its own, mapped
// to this user.
func newUserNamespace(testing.TB) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
}
