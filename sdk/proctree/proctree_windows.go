package proctree

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

func prepare(cmd *exec.Cmd, _ bool) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Its own console process group: console control events meant for the agent do
	// not reach it. Suspended, so that it runs no instruction before Attach has put it
	// in its job: a process that started running first could start others outside the
	// job, or be done before it (assigning an exited process is refused with "Access
	// denied", which is how a quick tool used to fail under Wine).
	cmd.SysProcAttr.CreationFlags |= syscall.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED
}

type sysGroup struct {
	mu  sync.Mutex
	job windows.Handle
}

func newKillOnCloseJob() (windows.Handle, error) { return newJob(0) }

// newJob is newKillOnCloseJob with more limit flags.
func newJob(flags uint32) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | flags,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

func attach(p *os.Process) (*sysGroup, error) {
	job, err := newKillOnCloseJob()
	if err != nil {
		return nil, err
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return nil, err
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return nil, err
	}
	if err := resume(uint32(p.Pid)); err != nil {
		_ = windows.CloseHandle(job)
		return nil, err
	}
	return &sysGroup{job: job}, nil
}

// resume lets a process started suspended (prepare) run: it resumes each of its
// threads, which for a fresh process is its one main thread. os/exec closes the thread
// handle CreateProcess returns, so the thread is found in a snapshot of the system's
// threads.
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("proctree: resume process %d: %w", pid, err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("proctree: resume process %d: thread %d: %w", pid, te.ThreadID, err)
		}
		_, err = windows.ResumeThread(th)
		_ = windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("proctree: resume process %d: thread %d: %w", pid, te.ThreadID, err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("proctree: resume process %d: listing threads: %w", pid, err)
	}
	if resumed == 0 {
		return fmt.Errorf("proctree: resume process %d: it has no thread", pid)
	}
	return nil
}

func (g *sysGroup) kill(p *os.Process) error {
	g.mu.Lock()
	job := g.job
	g.mu.Unlock()
	if job != 0 {
		if err := windows.TerminateJobObject(job, 1); err == nil {
			return nil
		}
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// The job holds the leftovers; ending it is all Kill does here anyway.
func (g *sysGroup) killLeftovers(p *os.Process) error { return g.kill(p) }

func (g *sysGroup) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.job != 0 {
		_ = windows.CloseHandle(g.job)
		g.job = 0
	}
}

// BecomeSubreaper is not available on Windows; TieToSelf covers the same need.
func BecomeSubreaper() error { return ErrUnsupported }

var selfJob windows.Handle

// TieToSelf puts the calling process in a kill-on-close job object whose only handle
// it keeps for the rest of its life. Every process it starts from then on, and every
// process those start, belongs to the job too, so when the caller dies for any reason
// (including being killed) Windows closes the handle and ends them all; a process the
// caller itself starts with CREATE_BREAKAWAY_FROM_JOB is the one exception.
func TieToSelf() error {
	if selfJob != 0 {
		return nil
	}
	// Breakaway is allowed from this job alone (a plugin's own job allows none): the
	// agent's self-update starts its watchdog with CREATE_BREAKAWAY_FROM_JOB, which
	// must outlive the agent it watches (agent/internal/service/selfupdate_windows.go).
	job, err := newJob(windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK)
	if err != nil {
		return err
	}
	if err := windows.AssignProcessToJobObject(job, windows.CurrentProcess()); err != nil {
		_ = windows.CloseHandle(job)
		return err
	}
	selfJob = job
	return nil
}

// KillDescendants is not needed on Windows: job objects end whole trees.
func KillDescendants(int) {}

// Descendants is not implemented on Windows: job objects end whole trees.
func Descendants(int) []int { return nil }
