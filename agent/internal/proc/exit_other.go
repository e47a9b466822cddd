//go:build !unix

package proc

import (
	"os"
	"strconv"
)

// describeExit words how a process ended: "exit status 2" (on Windows a process killed
// by another ends with the exit code its killer chose, 1 for the agent's kills).
func describeExit(st *os.ProcessState) string {
	return "exit status " + strconv.Itoa(st.ExitCode())
}
