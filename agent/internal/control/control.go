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
	"github.com/yuzugo/yuzu/agent/update"
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
	QueueDepth int64 `json:"queue_depth"`
	// JournalProblem is why the command journal cannot write now ("" while it does),
	// since JournalSince; HeldAnswers wait for it.
	JournalProblem string    `json:"journal_problem,omitempty"`
	JournalSince   time.Time `json:"journal_since,omitzero"`
	HeldAnswers    int       `json:"held_answers,omitempty"`
	// LinkError is why the last connection to the fleet server failed or ended.
	LinkError string `json:"link_error,omitempty"`
	// Certificate describes the client certificate the next connection presents
	// ("" when there is none); CertificateProblem is what is wrong with it: expired,
	// not yet valid, or close to its end.
	Certificate        string `json:"certificate,omitempty"`
	CertificateProblem string `json:"certificate_problem,omitempty"`
	// CertificateBad says the problem keeps the certificate from being accepted.
	CertificateBad bool `json:"certificate_bad,omitempty"`
	// Enrollment is "pending", "enrolled", "denied" or "" (the agent did not enroll
	// in this run), since EnrollmentSince, with the server's EnrollmentReason.
	Enrollment       string    `json:"enrollment,omitempty"`
	EnrollmentReason string    `json:"enrollment_reason,omitempty"`
	EnrollmentSince  time.Time `json:"enrollment_since,omitzero"`
	// RenewalError is the last failed renewal of the enrolled certificate ("" when
	// the last one worked or none failed).
	RenewalError string `json:"renewal_error,omitempty"`
	// Update is the agent's own updates: the running and offered versions, the last
	// check, why it cannot update, its rollbacks (nil before the session starts).
	Update  *update.Status      `json:"update,omitempty"`
	Plugins []supervisor.Status `json:"plugins"`
}

// ReloadReport is what a running agent says after reading its plugin catalog again
// (`plugins add` and its siblings ask for it): what changed, and every plugin's
// status once the changed ones have started or been rolled back.
type ReloadReport struct {
	Changes []supervisor.Change `json:"changes"`
	Plugins []supervisor.Status `json:"plugins"`
	Error   string              `json:"error,omitempty"`
}

// Handlers answer the requests. Reload may be nil: that agent does not follow its
// catalog, and says so.
type Handlers struct {
	Status func() Report
	Reload func(ctx context.Context) ReloadReport
}

// Bounds of a conversation: a request is one short word, a report a few KiB per
// plugin; a client that sends nothing is dropped. A reload waits for new builds to
// start (each bounded by the start timeout, a failed one tried twice) and for a
// rollback's start.
const (
	maxRequest     = 64
	MaxReport      = 4 << 20
	ioDeadline     = 10 * time.Second
	reloadDeadline = 90 * time.Second
	requestWord    = "status"
	reloadWord     = "reload"
)

// Serve answers each connection on l until ctx ends; it closes l.
func Serve(ctx context.Context, l net.Listener, h Handlers) error {
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
		go answer(ctx, c, h)
	}
}

func answer(ctx context.Context, c net.Conn, h Handlers) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioDeadline))
	line, err := bufio.NewReader(io.LimitReader(c, maxRequest)).ReadString('\n')
	if err != nil {
		return
	}
	switch strings.TrimSpace(line) {
	case requestWord:
		_ = json.NewEncoder(c).Encode(h.Status())
	case reloadWord:
		var r ReloadReport
		if h.Reload == nil {
			r.Error = "this agent does not follow its plugin catalog"
		} else {
			_ = c.SetDeadline(time.Now().Add(reloadDeadline))
			rctx, cancel := context.WithTimeout(ctx, reloadDeadline-ioDeadline)
			r = h.Reload(rctx)
			cancel()
		}
		_ = json.NewEncoder(c).Encode(r)
	default:
		_ = json.NewEncoder(c).Encode(map[string]string{"error": "unknown request; the agent answers: " + requestWord + ", " + reloadWord})
	}
}

// ErrNotRunning says no agent answers on the socket.
var ErrNotRunning = errors.New("no running agent answers")

// ErrNoUnixSockets is Listen's answer where the system has no AF_UNIX sockets (older
// Windows, Wine): the agent runs on without its status socket.
var ErrNoUnixSockets = errors.New("this system has no Unix domain sockets")

// Query asks the agent listening at path for its report.
func Query(ctx context.Context, path string) (Report, error) {
	var r Report
	err := ask(ctx, path, requestWord, ioDeadline, &r)
	return r, err
}

// Reload asks the agent listening at path to read its plugin catalog again, and
// returns what it did.
func Reload(ctx context.Context, path string) (ReloadReport, error) {
	var r ReloadReport
	err := ask(ctx, path, reloadWord, reloadDeadline, &r)
	return r, err
}

// ask sends one request and decodes the answer into v.
func ask(ctx context.Context, path, word string, limit time.Duration, v any) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return fmt.Errorf("%w on %s: %v", ErrNotRunning, path, err)
	}
	defer c.Close()
	deadline := time.Now().Add(limit)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	if _, err := io.WriteString(c, word+"\n"); err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(c, MaxReport+1))
	if err != nil {
		return err
	}
	if len(b) > MaxReport {
		return fmt.Errorf("the agent's answer is over %d bytes", MaxReport)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("the agent's answer: %w", err)
	}
	return nil
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
