package limits

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The Windows box is a job object of its own for each child (jobs nest since
// Windows 8): its memory (JOB_OBJECT_LIMIT_JOB_MEMORY, the job's committed memory,
// and JOB_OBJECT_LIMIT_PROCESS_MEMORY for each process), a hard CPU rate cap and
// ActiveProcessLimit, everything the child starts being in the job too. Windows does
// not kill at the memory limit: allocations past it fail, which ends a Go plugin with
// "out of memory". Each refusal is posted to the job's completion port (as is each
// process start refused at ActiveProcessLimit), which is how the box knows that a
// child ended over its memory: the peak alone cannot tell, since a refused commit of
// 64 MiB leaves the peak up to 64 MiB short of the limit.

// Host makes boxes.
type Host struct {
	// noCPURate says why jobs here take no CPU rate cap (Wine's do not, nor do
	// Windows releases before 8): boxes then hold memory and processes only.
	noCPURate string
}

// New returns a Host, having tried once whether a job takes a CPU rate cap.
func New() *Host {
	h := &Host{}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return h // Box will fail with the same error, logged per child
	}
	defer windows.CloseHandle(job)
	if err := setCPURate(job, Default.CPUs); err != nil {
		h.noCPURate = "job objects here take no CPU rate cap (" + err.Error() + "): plugins run without a CPU limit"
	}
	return h
}

// Unavailable says what job objects here cannot limit, empty when they limit all.
func (h *Host) Unavailable() string { return h.noCPURate }

// Where says what the boxes are.
func (*Host) Where() string { return "a job object per plugin child" }

// Close does nothing: each box closes its job.
func (*Host) Close() {}

// Box is one child's job object.
type Box struct {
	limits Limits
	mu     sync.Mutex
	job    windows.Handle
	// port is the job's completion port, 0 where it could not be associated (the
	// memory verdict then falls back on the peak, OOMKilled).
	port windows.Handle
	// memoryHits and tasksRefused count the port's memory-limit and
	// process-limit messages read so far (drain); active and activePeak follow its
	// process starts and exits, the peak being what the job's counters lack.
	memoryHits, tasksRefused int64
	active, activePeak       int64
	last                     Usage
	closed                   bool
}

// jobPort is JOBOBJECT_ASSOCIATE_COMPLETION_PORT.
type jobPort struct {
	Key  uintptr
	Port windows.Handle
}

// The job messages the box counts (JOB_OBJECT_MSG_*).
const (
	msgActiveProcessLimit = 3
	msgActiveProcessZero  = 4
	msgNewProcess         = 6
	msgExitProcess        = 7
	msgAbnormalExit       = 8
	msgProcessMemoryLimit = 9
	msgJobMemoryLimit     = 10
)

// portKey tells the box's own messages from any other completion on its port (there
// is none; the port is the box's alone).
const portKey = 0x79757a75 // "yuzu"

// jobCPURate is JOBOBJECT_CPU_RATE_CONTROL_INFORMATION with a CpuRate (the union's
// first member): the share of all processors, in hundredths of a percent.
type jobCPURate struct {
	ControlFlags uint32
	CPURate      uint32
}

const (
	cpuRateEnable  = 0x1 // JOB_OBJECT_CPU_RATE_CONTROL_ENABLE
	cpuRateHardCap = 0x4 // JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP
)

// Box makes a job object with limits l.
func (h *Host) Box(_ string, l Limits) (*Box, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_JOB_MEMORY |
				windows.JOB_OBJECT_LIMIT_PROCESS_MEMORY | windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS,
			ActiveProcessLimit: uint32(min(l.Tasks, 1<<31)),
		},
		JobMemoryLimit:     uintptr(l.MemoryBytes),
		ProcessMemoryLimit: uintptr(l.MemoryBytes),
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return nil, fmt.Errorf("job memory and process limits: %w", err)
	}
	if h.noCPURate != "" {
		l.CPUs = 0 // not enforced, so not reported as a limit
	} else if err := setCPURate(job, l.CPUs); err != nil {
		_ = windows.CloseHandle(job)
		return nil, fmt.Errorf("job CPU rate: %w", err)
	}
	return &Box{limits: l, job: job, port: newPort(job)}, nil
}

// newPort associates a completion port of its own with job, before any process is in
// it, and returns it; 0 when that fails (the box still limits, OOMKilled then judges
// by the peak).
func newPort(job windows.Handle) windows.Handle {
	port, err := windows.CreateIoCompletionPort(windows.InvalidHandle, 0, 0, 1)
	if err != nil {
		return 0
	}
	a := jobPort{Key: portKey, Port: port}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectAssociateCompletionPortInformation,
		uintptr(unsafe.Pointer(&a)), uint32(unsafe.Sizeof(a))); err != nil {
		_ = windows.CloseHandle(port)
		return 0
	}
	return port
}

var procGetQueuedCompletionStatus = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetQueuedCompletionStatus")

// drain reads every message waiting on the port, without waiting, and counts the
// limit messages and the processes in the job; b.mu is held. Reading them also keeps
// the queue from growing with a plugin that starts many processes. The messages come
// in order, so the peak is exact however seldom the port is read.
// GetQueuedCompletionStatus is called directly: for job messages its "overlapped"
// out-value is a process id, not a pointer, and must not be kept in a Go pointer.
func (b *Box) drain() {
	if b.port == 0 {
		return
	}
	for range 1 << 16 { // bounded: a queue refilled as fast as it is read ends here
		var code uint32
		var key, value uintptr
		r, _, _ := procGetQueuedCompletionStatus.Call(uintptr(b.port), uintptr(unsafe.Pointer(&code)),
			uintptr(unsafe.Pointer(&key)), uintptr(unsafe.Pointer(&value)), 0)
		if r == 0 {
			return // WAIT_TIMEOUT: the queue is empty
		}
		if key != portKey {
			continue
		}
		switch code {
		case msgProcessMemoryLimit, msgJobMemoryLimit:
			b.memoryHits++
		case msgActiveProcessLimit:
			b.tasksRefused++
		case msgNewProcess:
			b.active++
			b.activePeak = max(b.activePeak, b.active)
		case msgExitProcess, msgAbnormalExit:
			b.active = max(0, b.active-1)
		case msgActiveProcessZero:
			// Also the only message Wine posts when the job is terminated.
			b.active = 0
		}
	}
}

// setCPURate caps job at cpus CPUs' worth of time, a hard cap.
func setCPURate(job windows.Handle, cpus float64) error {
	rate := jobCPURate{ControlFlags: cpuRateEnable | cpuRateHardCap,
		CPURate: uint32(min(10000, max(1, cpus*10000/float64(runtime.NumCPU()))))}
	_, err := windows.SetInformationJobObject(job, windows.JobObjectCpuRateControlInformation,
		uintptr(unsafe.Pointer(&rate)), uint32(unsafe.Sizeof(rate)))
	return err
}

// Limits returns the box's limits.
func (b *Box) Limits() Limits { return b.limits }

// Prepare does nothing: the child joins the job once started.
func (*Box) Prepare(*exec.Cmd) {}

// Started puts the child in the job.
func (b *Box) Started(pid int) error {
	if b == nil {
		return nil
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.AssignProcessToJobObject(b.job, h)
}

// StartFailed closes the job.
func (b *Box) StartFailed() { b.Close() }

// Kill ends every process in the job.
func (b *Box) Kill() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		_ = windows.TerminateJobObject(b.job, 1)
	}
}

// Close keeps the last counters and closes the job, which ends what is left in it.
func (b *Box) Close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.last = b.read()
	b.closed = true
	_ = windows.CloseHandle(b.job)
	if b.port != 0 {
		_ = windows.CloseHandle(b.port)
	}
}

// Usage returns the job's counters.
func (b *Box) Usage() Usage {
	if b == nil {
		return Usage{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.last
	}
	return b.read()
}

// read reads the counters; b.mu is held.
func (b *Box) read() Usage {
	b.drain()
	u := Usage{OOMKills: b.memoryHits, TasksRefused: b.tasksRefused, TasksPeak: b.activePeak}
	var ext windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if err := windows.QueryInformationJobObject(b.job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&ext)), uint32(unsafe.Sizeof(ext)), nil); err == nil {
		u.Known = true
		u.MemoryPeak = int64(ext.PeakJobMemoryUsed)
	}
	var acct struct {
		TotalUserTime, TotalKernelTime, ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime int64
		TotalPageFaultCount, TotalProcesses, ActiveProcesses, TotalTerminatedProcesses     uint32
	}
	if err := windows.QueryInformationJobObject(b.job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&acct)), uint32(unsafe.Sizeof(acct)), nil); err == nil {
		u.Known = true
		u.Tasks = int64(acct.ActiveProcesses)
		u.CPUSeconds = float64(acct.TotalUserTime+acct.TotalKernelTime) / 1e7 // 100 ns units
	}
	return u
}

// OOMKilled says an allocation in the box was refused at its memory limit (Windows
// refuses rather than kills, and the refusal ends a Go plugin): the job's port said
// so. Without a port the peak is all there is, and reaching the limit within 1 MiB is
// taken as the cause of an exit; that misses a refusal of a commit larger than the
// gap left.
func (b *Box) OOMKilled() bool {
	if b == nil {
		return false
	}
	u := b.Usage()
	if b.port != 0 {
		return u.OOMKills > 0
	}
	return u.MemoryPeak >= b.limits.MemoryBytes-(1<<20)
}
