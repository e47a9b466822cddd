package subprocess

import (
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

const defaultPath = `C:\Windows\system32;C:\Windows`

func rootDir() string {
	if d := os.Getenv("SystemDrive"); d != "" {
		return d + `\`
	}
	return `C:\`
}

// prepare starts the tool in its own console process group, so console control events
// meant for the agent do not reach it and it can be signalled on its own.
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// group is a job object holding the tool. Windows has no kill(-pgid); terminating the
// job kills every process in it, and KILL_ON_JOB_CLOSE kills leftovers when Run ends.
// Processes the tool starts before it is assigned to the job (a window of
// microseconds after CreateProcess) escape it.
type group struct {
	job  windows.Handle
	proc *os.Process
}

func newGroup(cmd *exec.Cmd) (*group, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return nil, err
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return nil, err
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return nil, err
	}
	return &group{job: job, proc: cmd.Process}, nil
}

func (g *group) kill() error {
	if err := windows.TerminateJobObject(g.job, 1); err != nil {
		return g.proc.Kill()
	}
	return nil
}

func (g *group) close() { _ = windows.CloseHandle(g.job) }
