package proctree

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func prepare(cmd *exec.Cmd, deathSignal bool) {
	attr := prepareUnix(cmd)
	if deathSignal {
		attr.Pdeathsig = syscall.SIGKILL
	}
}

// BecomeSubreaper makes the calling process the parent of every orphaned descendant
// (Linux's child subreaper), so that what a child leaves behind when it dies stays
// within reach instead of moving to init.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// TieToSelf is a no-op on Linux: children get a parent-death signal instead (Prepare).
func TieToSelf() error { return nil }

// maxStat bounds one /proc/<pid>/stat read; the line is a few hundred bytes.
const maxStat = 4096

// parentTable maps every pid in /proc to its parent pid.
func parentTable() map[int]int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil
	}
	table := make(map[int]int, len(names))
	buf := make([]byte, maxStat)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if ppid, ok := readPPID(pid, buf); ok {
			table[pid] = ppid
		}
	}
	return table
}

// readPPID reads the parent pid from /proc/<pid>/stat: the fourth field, after the
// command name in parentheses, which may itself hold spaces and parentheses (hence the
// last ')').
func readPPID(pid int, buf []byte) (int, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	n, _ := f.Read(buf)
	f.Close()
	line := buf[:n]
	i := bytes.LastIndexByte(line, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(line[i+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	return ppid, err == nil
}

// hasChildren reports whether the calling process has any child at all, live or
// waiting to be reaped: one system call, where walking the process table reads every
// process's stat file. It errs towards true.
func hasChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED|unix.WNOHANG|unix.WNOWAIT, nil)
	return !errors.Is(err, unix.ECHILD)
}
