// Package sdnotify tells systemd the agent's state through $NOTIFY_SOCKET (the unit's
// Type=notify): READY=1 once the agent may be counted as started. Elsewhere, and
// without the variable, it does nothing.
package sdnotify

import (
	"net"
	"os"
	"strings"
)

// Send writes state ("READY=1", "STATUS=...", lines joined by newlines) to the socket
// systemd named. It reports whether there was one to write to.
func Send(state string) (bool, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return false, nil
	}
	// An abstract socket is written "@name"; its address starts with a NUL byte.
	if strings.HasPrefix(path, "@") {
		path = "\x00" + path[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return true, err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return true, err
}
