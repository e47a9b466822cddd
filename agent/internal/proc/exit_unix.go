//go:build unix

package proc

import (
	"os"
	"strconv"
	"syscall"
)

// describeExit words how a process ended: "exit status 2" or "killed by signal 9
// (killed)".
func describeExit(st *os.ProcessState) string {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		s := "killed by signal " + strconv.Itoa(int(ws.Signal())) + " (" + ws.Signal().String() + ")"
		if ws.CoreDump() {
			s += ", core dumped"
		}
		return s
	}
	return "exit status " + strconv.Itoa(st.ExitCode())
}
