//go:build !linux

package subprocess

// awaitExit cannot wait without reaping here, so Run leaves the wait to exec.Cmd.Wait
// and does not kill what the tool leaves behind after a normal exit (the deadline and
// cancellation still kill the whole group). On Windows the job object does that job
// when it is closed.
func awaitExit(int) bool { return false }
