// Package control is the running agent's local status endpoint: `yuzu-agent run`
// listens on a Unix socket in its data dir that only root (the agent's user) can
// reach, and `yuzu-agent status` and `diagnostics` ask it how the agent is doing. On
// Windows the socket is an AF_UNIX socket too, in a directory whose ACL admits only
// SYSTEM and Administrators (docs/operations.md, "Status").
package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// SocketName is the socket's file name in Dir.
const SocketName = "agent.sock"

// Dir is the directory of the socket inside the data dir.
func Dir(dataDir string) string { return filepath.Join(dataDir, "run") }

// Path is the socket of the agent whose data dir is dataDir.
func Path(dataDir string) string { return filepath.Join(Dir(dataDir), SocketName) }

// Report is what a running agent says of itself.
type Report struct {
	Version    string    `json:"version"`
	Commit     string    `json:"commit"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	AgentID    string    `json:"agent_id"`
	Server     string    `json:"server"`
	ConfigFile string    `json:"config_file"`
	// Connected says the command stream to the fleet server is up; Reconnects counts
	// the attempts to bring it back since start.
	Connected  bool   `json:"connected"`
	Reconnects uint64 `json:"reconnects"`
	// QueueDepth is the commands received and not yet answered.
	QueueDepth int64               `json:"queue_depth"`
	Plugins    []supervisor.Status `json:"plugins"`
}

// Bounds of a conversation: a request is one short word, a report a few KiB per
// plugin; a client that sends nothing is dropped.
const (
	maxRequest  = 64
	MaxReport   = 4 << 20
	ioDeadline  = 10 * time.Second
	requestWord = "status"
)

// Serve answers each connection on l with report() until ctx ends; it closes l.
func Serve(ctx context.Context, l net.Listener, report func() Report) error {
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		go answer(c, report)
	}
}

func answer(c net.Conn, report func() Report) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioDeadline))
	line, err := bufio.NewReader(io.LimitReader(c, maxRequest)).ReadString('\n')
	if err != nil {
		return
	}
	if strings.TrimSpace(line) != requestWord {
		_ = json.NewEncoder(c).Encode(map[string]string{"error": "unknown request; the agent answers: " + requestWord})
		return
	}
	_ = json.NewEncoder(c).Encode(report())
}

// ErrNotRunning says no agent answers on the socket.
var ErrNotRunning = errors.New("no running agent answers")

// ErrNoUnixSockets is Listen's answer where the system has no AF_UNIX sockets (older
// Windows, Wine): the agent runs on without its status socket.
var ErrNoUnixSockets = errors.New("this system has no Unix domain sockets")

// Query asks the agent listening at path for its report.
func Query(ctx context.Context, path string) (Report, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return Report{}, fmt.Errorf("%w on %s: %v", ErrNotRunning, path, err)
	}
	defer c.Close()
	deadline := time.Now().Add(ioDeadline)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	if _, err := io.WriteString(c, requestWord+"\n"); err != nil {
		return Report{}, err
	}
	b, err := io.ReadAll(io.LimitReader(c, MaxReport+1))
	if err != nil {
		return Report{}, err
	}
	if len(b) > MaxReport {
		return Report{}, fmt.Errorf("the agent's report is over %d bytes", MaxReport)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return Report{}, fmt.Errorf("the agent's report: %w", err)
	}
	return r, nil
}

// clearStale removes the socket a dead agent left at path: isSocket says whether what
// is there may be one (anything else is refused, never removed); one that answers
// means another agent runs on the data dir.
func clearStale(path string, isSocket func(fs.FileInfo) bool) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !isSocket(fi) {
		return fmt.Errorf("%s is %s, not the agent's socket; remove it", path, safefile.Describe(fi.Mode()))
	}
	if c, err := net.DialTimeout("unix", path, 2*time.Second); err == nil {
		c.Close()
		return fmt.Errorf("another agent answers on %s: one agent per data dir", path)
	}
	return os.Remove(path)
}
