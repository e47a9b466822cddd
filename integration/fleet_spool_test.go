//go:build linux

package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// The test fleet server usually runs inside the test binary; to kill it as a crash
// would (SIGKILL, nothing flushed, nothing said), TestFleetServerKilled runs it as a
// process of its own: the test binary again, in server mode (recordedServer). It
// appends everything it receives to a record file, which the test reads afterwards,
// and sends a list of commands once each across all its incarnations.

// recordedServerEnv puts the test binary in server mode; its value is the JSON of a
// recordedServerConfig.
const recordedServerEnv = "YUZU_TEST_RECORDED_SERVER"

type recordedServerConfig struct {
	Addr                string
	CA, Cert, Key       string
	Record, Commands    string
	SubscribedIncrement bool
}

// Kinds of record in the record file: a response received, a command sent, an agent
// subscribed.
const (
	recResponse  = 'R'
	recSent      = 'S'
	recSubscribe = 'A'
)

// recordedServer runs the test fleet server until it is killed: every response it
// receives is appended to the record file (one write each, so a kill loses at most
// what the server had not read), and the commands of the commands file that no
// earlier incarnation sent are sent, in order, to the first agent that subscribes,
// each marked in the record once Send has taken it.
func recordedServer() int {
	var c recordedServerConfig
	if err := json.Unmarshal([]byte(os.Getenv(recordedServerEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, "recorded server:", err)
		return 1
	}
	// A kill may have torn the last record of the previous incarnation: cut it off,
	// or everything appended after it would be unreadable.
	records, whole := readRecords(c.Record)
	if err := os.Truncate(c.Record, whole); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(os.Stderr, "recorded server:", err)
		return 1
	}
	rec, err := os.OpenFile(c.Record, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recorded server:", err)
		return 1
	}
	write := func(kind byte, payload []byte) {
		buf := make([]byte, 5+len(payload))
		buf[0] = kind
		binary.BigEndian.PutUint32(buf[1:], uint32(len(payload)))
		copy(buf[5:], payload)
		if _, err := rec.Write(buf); err != nil {
			fmt.Fprintln(os.Stderr, "recorded server: record:", err)
			os.Exit(1)
		}
	}
	var cmds []*agentv1.CommandRequest
	b, err := os.ReadFile(c.Commands)
	if err == nil {
		err = json.Unmarshal(b, &cmds)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "recorded server: commands:", err)
		return 1
	}
	sent := map[string]bool{}
	for _, r := range records {
		if r.kind == recSent {
			sent[string(r.payload)] = true
		}
	}
	tlsConf, err := fleetserver.LoadServerTLS(c.CA, c.Cert, c.Key)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recorded server:", err)
		return 1
	}
	srv, err := fleetserver.Start(c.Addr, fleetserver.Options{TLS: tlsConf, OnResponse: func(r *agentv1.CommandResponse) {
		data, err := proto.Marshal(r)
		if err != nil {
			panic(err)
		}
		write(recResponse, data)
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "recorded server:", err)
		return 1
	}
	ctx := context.Background()
	if err := srv.WaitSubscribed(ctx); err != nil {
		return 1
	}
	write(recSubscribe, nil)
	for _, cmd := range cmds {
		if sent[cmd.GetCommandId()] {
			continue
		}
		if err := srv.Send(ctx, cmd); err != nil {
			return 1
		}
		write(recSent, []byte(cmd.GetCommandId()))
	}
	select {}
}

type record struct {
	kind    byte
	payload []byte
}

// readRecords reads a record file and says how many of its bytes hold whole records:
// a record torn by a kill at its end is dropped.
func readRecords(path string) ([]record, int64) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	return readRecordsFrom(f)
}

func readRecordsFrom(f io.Reader) ([]record, int64) {
	r := bufio.NewReader(f)
	var out []record
	var whole int64
	for {
		var head [5]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return out, whole
		}
		payload := make([]byte, binary.BigEndian.Uint32(head[1:]))
		if _, err := io.ReadFull(r, payload); err != nil {
			return out, whole
		}
		out = append(out, record{kind: head[0], payload: payload})
		whole += int64(len(head) + len(payload))
	}
}

// TestFleetServerKilled: the fleet server is SIGKILLed 40 times, at random moments,
// while the agent delivers a 100,000-row answer and then 1,000 short ones, and started
// again on the same address each time. Whatever the agent accepted is answered, with
// no hole in any answer's rows and no SUCCESS over incomplete rows: answers the
// server may not have had when it died are sent again whole (docs/fleet.md, "Nothing
// lost"). The server sees some rows and terminals twice; the count is logged.
func TestFleetServerKilled(t *testing.T) {
	t.Parallel()
	const (
		kills   = 40
		bigRows = 100000
		short   = 1000
	)
	w := newWorld(t, sleeperBin)
	dir := t.TempDir()
	pki, err := fleetserver.NewPKI(filepath.Join(dir, "pki"), "fleet")
	if err != nil {
		t.Fatal(err)
	}
	cmds := []*agentv1.CommandRequest{command("big", "sleeper", "rows", "n="+strconv.Itoa(bigRows))}
	for i := range short {
		cmds = append(cmds, command(fmt.Sprint("s", i), "sleeper", "ok"))
	}
	cmdJSON, err := json.Marshal(cmds)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "commands.json"), string(cmdJSON), 0o600)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	conf, _ := json.Marshal(recordedServerConfig{Addr: addr, CA: pki.CA, Cert: pki.ServerCert, Key: pki.ServerKey,
		Record: filepath.Join(dir, "record"), Commands: filepath.Join(dir, "commands.json")})
	var server *exec.Cmd
	var serverLog lockedBuffer
	startServer := func() {
		server = exec.Command(os.Args[0], "-test.run=^$")
		server.Env = append(baseEnv(), recordedServerEnv+"="+string(conf))
		server.Stdout, server.Stderr = &serverLog, &serverLog
		if err := server.Start(); err != nil {
			t.Fatal(err)
		}
	}
	log := &recordLog{path: filepath.Join(dir, "record"), seen: map[string]*answerSeen{}}
	subscribed := func() int {
		log.update(t)
		return log.subs
	}
	startServer()
	t.Cleanup(func() {
		_ = server.Process.Kill()
		_ = server.Wait()
	})
	a := startAgentProc(t, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "--log-level", "debug", "run",
		"--server", addr, "--heartbeat", "1", "--ca-cert", pki.CA, "--client-cert", pki.ClientCert, "--client-key", pki.ClientKey)
	for i := 1; i <= kills; i++ {
		for end := time.Now().Add(60 * time.Second); subscribed() < i; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				// A Go process dumps its goroutines on SIGQUIT: where the server waits.
				_ = server.Process.Signal(syscall.SIGQUIT)
				_ = server.Wait()
				t.Fatalf("no subscription %d within 60 s\nserver log:\n%s\nagent goroutines:\n%s", i, serverLog.String(), a.goroutines())
			}
		}
		time.Sleep(time.Duration(rand.Int64N(int64(1200*time.Millisecond))) + 50*time.Millisecond)
		if err := server.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = server.Wait()
		startServer()
	}

	// The last server stays: every command the agent accepted must now be answered.
	accepted := regexp.MustCompile(`yuzu-agent\.fleet: command: id=(\S+) `)
	// The bound is generous; a terminal still missing after it is lost, and counted
	// below with everything else.
	var missing []string
	for end := time.Now().Add(120 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res := log.update(t)
		missing = missing[:0]
		for _, m := range accepted.FindAllStringSubmatch(a.stderr.String(), -1) {
			if res[m[1]] == nil || res[m[1]].terminal == nil {
				missing = append(missing, m[1])
			}
		}
		if len(missing) == 0 || time.Now().After(end) {
			break
		}
	}
	a.stop(t)

	res := log.update(t)
	ids := map[string]bool{}
	for _, m := range accepted.FindAllStringSubmatch(a.stderr.String(), -1) {
		ids[m[1]] = true
	}
	var holes, incomplete, lost, dupRows, dupTerminals, neverDelivered int
	for _, c := range cmds {
		id := c.GetCommandId()
		r := res[id]
		if r == nil {
			r = &answerSeen{rows: map[string]bool{}}
		}
		if !ids[id] {
			// Sent by a server that died before the agent had the command: the
			// server's loss, not the agent's.
			neverDelivered++
			continue
		}
		if r.terminal == nil {
			lost++
			continue
		}
		dupTerminals += r.terminals - 1
		dupRows += r.rowCount - len(r.rows)
		want := 1
		if id == "big" {
			want = bigRows
		}
		// Every SUCCESS the server saw must have come when it had every row.
		for _, n := range r.successAt {
			if n != want {
				incomplete++
				t.Errorf("%s: a SUCCESS came when the server had %d of %d rows", id, n, want)
			}
		}
		if id == "big" {
			for i := 0; i < bigRows; i++ {
				if !r.rows[fmt.Sprintf("row|%d|abcdefghijklmnopqrstuvwxyz", i)] {
					holes++
				}
			}
		} else if !r.rows["ok|sleeper"] {
			holes++
		}
		if r.terminal.GetStatus() != agentv1.CommandResponse_SUCCESS {
			t.Errorf("%s: terminal %v (%v)", id, r.terminal.GetStatus(), r.terminal.GetError())
		}
	}
	t.Logf("%d kills; %d commands accepted, %d sent by a server that died before the agent had them; lost terminals %d, rows missing %d, SUCCESS over incomplete rows %d; seen twice or more: %d rows, %d terminals",
		kills, len(ids), neverDelivered, lost, holes, incomplete, dupRows, dupTerminals)
	if lost > 0 || holes > 0 || incomplete > 0 {
		t.Errorf("lost terminals %d (e.g. %v), rows missing %d, incomplete SUCCESS %d: want 0 each\nserver log:\n%s", lost, first(missing, 5), holes, incomplete, serverLog.String())
	}
	if !ids["big"] || len(ids) < short/2 {
		t.Errorf("the agent accepted %d commands (big: %v): the test did not exercise what it should", len(ids), ids["big"])
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// answerSeen is what the server recorded of one command: its distinct rows, how many
// rows came in all, the first terminal, how many terminals came, and how many distinct
// rows the server had when each SUCCESS came.
type answerSeen struct {
	rows      map[string]bool
	rowCount  int
	terminal  *agentv1.CommandResponse
	terminals int
	successAt []int
}

// recordLog reads a record file as it grows: each update takes the whole records
// appended since the last one.
type recordLog struct {
	path string
	off  int64
	subs int
	seen map[string]*answerSeen
}

func (l *recordLog) update(t *testing.T) map[string]*answerSeen {
	t.Helper()
	f, err := os.Open(l.path)
	if err != nil {
		return l.seen
	}
	defer f.Close()
	if _, err := f.Seek(l.off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	records, whole := readRecordsFrom(f)
	l.off += whole
	out := l.seen
	for _, r := range records {
		if r.kind == recSubscribe {
			l.subs++
		}
		if r.kind != recResponse {
			continue
		}
		resp := &agentv1.CommandResponse{}
		if err := proto.Unmarshal(r.payload, resp); err != nil {
			t.Fatalf("a recorded response does not decode: %v", err)
		}
		a := out[resp.GetCommandId()]
		if a == nil {
			a = &answerSeen{rows: map[string]bool{}}
			out[resp.GetCommandId()] = a
		}
		switch {
		case resp.GetStatus() != agentv1.CommandResponse_RUNNING:
			a.terminals++
			if a.terminal == nil {
				a.terminal = resp
			}
			if resp.GetStatus() == agentv1.CommandResponse_SUCCESS {
				a.successAt = append(a.successAt, len(a.rows))
			}
		case strings.HasPrefix(resp.GetOutput(), "__timing__|"), resp.GetOutput() == "duplicate command still in flight":
		default:
			for _, row := range strings.Split(resp.GetOutput(), "\n") {
				a.rows[row] = true
				a.rowCount++
			}
		}
	}
	return out
}
