// Command yuzu-testserver is the test fleet server (integration/fleetserver) as a
// console, for trying the fleet link by hand: it makes a throw-away certificate
// authority, listens, prints the exact `yuzu-agent run` line that connects an agent,
// and reads commands from stdin (docs/fleet.md "Trying it by hand"):
//
//	send PLUGIN ACTION [key=value ...]   push a command to the connected agent, await its answer
//	send DEFINITION-ID [key=value ...]   the same through a definition
//	publish FILE VERSION                 publish a plugin build (FILE.minisig, if there, is its signature)
//	deploy NAME VERSION [AGENT-ID ...]   have agents (default: every connected one) install it
//	wait [SECONDS]                       wait until every command sent has its answer
//	agents                               the agents that registered
//	help, quit
//
// Answers print as they arrive. It is a developer's tool, never installed on a host.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/update"
	"github.com/yuzugo/yuzu/agent/words"
	"github.com/yuzugo/yuzu/definitions"
	"github.com/yuzugo/yuzu/integration/fleetserver"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/rows"
)

const help = `commands:
  send PLUGIN ACTION [key=value ...]   push a command to the connected agent; the next line
                                       waits for its answer (up to 30s)
  send DEFINITION-ID [key=value ...]   the same through a definition (checked here first; its
                                       versioned requiredPlugins go along as __requires__)
  publish FILE VERSION                 publish a plugin build for agents to download (its
                                       signature, FILE.minisig, goes along when there is one)
  deploy NAME VERSION [AGENT-ID ...]   have agents install a published build (default: every
                                       connected agent), and wait for their answers
  publish-agent FILE [mandatory] [share=N]
                                       offer an agent bundle (yuzu-bundle make) to the agents
                                       of its system: they check after registering, and after
                                       a reconnect within their splay; share=N offers it to N%
                                       of them (a stable hash of the agent id), default 100
  updates                              the update checks agents made, and what they were offered
  wait [SECONDS]                       wait until every command sent has its answer (default 60)
  agents                               the agents that registered, * marks the connected one
  approve AGENT-ID                     let a pending enrollment through (-approval pending)
  pending                              the agents whose enrollment waits for approve
  issued                               the certificates signed so far: agent, serial, validity
  revoke SERIAL                        refuse a certificate (hex serial, as issued lists it)
                                       in the TLS handshake from now on
  help                                 this text
  quit                                 stop (the end of input waits for the answers first)
Words are quoted as in a POSIX shell: send tags set key=note value='two words'.
`

// options are the command's flags.
type options struct {
	listen, dir, token, pluginDir string
	noTLS                         bool
	lifetime                      time.Duration
	approval                      string
}

func main() {
	var o options
	flag.StringVar(&o.listen, "listen", "127.0.0.1:50051", "address to listen on (port 0 picks one)")
	flag.StringVar(&o.dir, "dir", "", "directory for the test certificates: made if missing, reused if it holds them (default: a temporary one, removed at the end)")
	flag.StringVar(&o.token, "enrollment-token", "", "enrollment token every agent must send (default: none asked)")
	flag.StringVar(&o.pluginDir, "plugin-dir", "", "plugin dir whose served definitions send DEFINITION-ID may name (default: the agent's workflows only)")
	flag.BoolVar(&o.noTLS, "no-tls", false, "plaintext instead of mutual TLS")
	flag.DurationVar(&o.lifetime, "issue-lifetime", 24*time.Hour, "how long a certificate signed for an enrolling or renewing agent is valid")
	flag.StringVar(&o.approval, "approval", "auto", "how enrollments are answered: auto (a certificate at once), pending (until approve AGENT-ID) or deny")
	flag.Parse()
	switch fleetserver.Approval(o.approval) {
	case fleetserver.ApproveAuto, fleetserver.ApprovePending, fleetserver.ApproveDeny:
	default:
		fmt.Fprintf(os.Stderr, "yuzu-testserver: -approval %q: want auto, pending or deny\n", o.approval)
		os.Exit(2)
	}
	if o.lifetime < 10*time.Second {
		fmt.Fprintf(os.Stderr, "yuzu-testserver: -issue-lifetime %s: at least 10s\n", o.lifetime)
		os.Exit(2)
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "yuzu-testserver: no arguments are taken, got %q\n", flag.Arg(0))
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, o, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "yuzu-testserver:", err)
		os.Exit(1)
	}
}

// console is the server and what the operator typed so far.
type console struct {
	srv    *fleetserver.Server
	defs   map[string]definition.Definition
	builds map[string]*fleetserver.Build // "name version" -> published build

	mu   sync.Mutex // one line of output at a time
	out  io.Writer
	sent []string // command ids, in order
	next int
	// issuer signs the enrolling agents' certificates (nil with -no-tls).
	issuer *fleetserver.Issuer
	// idPrefix starts every command id, new at each start: an agent's journal
	// remembers the ids it ran, so a restarted server that numbered from 1 again
	// would get old answers for new commands.
	idPrefix string
}

func (c *console) printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.out, format, args...)
}

func serve(ctx context.Context, o options, in io.Reader, out io.Writer) error {
	c := &console{out: out, builds: map[string]*fleetserver.Build{}}
	var run [3]byte
	if _, err := rand.Read(run[:]); err != nil {
		return err
	}
	c.idPrefix = "cmd-" + hex.EncodeToString(run[:])
	var err error
	if c.defs, err = knownDefinitions(ctx, o.pluginDir); err != nil {
		return err
	}
	opts := fleetserver.Options{
		EnrollmentToken: o.token,
		OnResponse: func(r *agentv1.CommandResponse) {
			c.mu.Lock()
			defer c.mu.Unlock()
			fleetserver.WriteResponse(c.out, r)
		},
		OnRegister: func(req *agentv1.RegisterRequest, resp *agentv1.RegisterResponse) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if !resp.GetAccepted() {
				fmt.Fprintf(c.out, "fleet: refused agent %s: %s\n", rows.Printable(req.GetInfo().GetAgentId()), rows.Printable(resp.GetRejectReason()))
				return
			}
			if req.GetCsrPem() != "" && resp.GetIssuedCertificate() != "" {
				// The agent connects again with the certificate: that registration
				// is the one that describes it.
				kind := "enrolled"
				if req.GetEnrollmentToken() == "" {
					kind = "renewed the certificate of"
				}
				fmt.Fprintf(c.out, "fleet: %s agent %s (a certificate signed for its CSR)\n", kind, rows.Printable(req.GetInfo().GetAgentId()))
				return
			}
			fleetserver.WriteRegistration(c.out, req)
		},
	}
	var runFlags []string
	dir, cleanup, err := workDir(o.dir)
	if err != nil {
		return err
	}
	defer cleanup()
	if o.noTLS {
		runFlags = append(runFlags, "--no-tls")
	} else {
		pki, err := authority(dir)
		if err != nil {
			return err
		}
		c.issuer = pki.NewIssuer(o.lifetime, fleetserver.Approval(o.approval))
		opts.Issuer, opts.TLS = c.issuer, c.issuer.ServerTLS()
		runFlags = append(runFlags, "--ca-cert", quote(pki.CA))
		if o.token == "" {
			// No token to enroll with: the agent gets the authority's client
			// certificate instead.
			runFlags = append(runFlags, "--client-cert", quote(pki.ClientCert), "--client-key", quote(pki.ClientKey))
		}
	}
	if o.token != "" {
		// A file, mode 0600, rather than the token on the agent's command line,
		// where every local user could read it.
		path := filepath.Join(dir, "enrollment-token")
		if err := os.WriteFile(path, []byte(o.token+"\n"), 0o600); err != nil {
			return err
		}
		if err := os.Chmod(path, 0o600); err != nil {
			return err
		}
		runFlags = append(runFlags, "--enrollment-token-file", quote(path))
	}
	if c.srv, err = fleetserver.Start(o.listen, opts); err != nil {
		return err
	}
	defer c.srv.Stop()
	mode := "mutual TLS with a throw-away certificate authority"
	switch {
	case o.noTLS:
		mode = "plaintext (--no-tls)"
	case o.token != "":
		mode += fmt.Sprintf("; agents enroll with the token (approval %s, certificates valid %s)", o.approval, o.lifetime)
	}
	c.printf("yuzu-testserver: listening on %s, %s\n", c.srv.Addr(), mode)
	c.printf("connect an agent with:\n  yuzu-agent run --server %s %s\n", c.srv.Addr(), strings.Join(runFlags, " "))
	c.printf("command ids are %s-N, a new prefix at every start\n", c.idPrefix)
	c.printf("then type send PLUGIN ACTION [key=value ...], agents, help or quit\n")
	return c.read(ctx, in)
}

// workDir is the directory for the test authority and the token file: dir, made if
// missing, or a temporary one that cleanup removes.
func workDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o700)
	}
	tmp, err := os.MkdirTemp("", "yuzu-testserver-")
	if err != nil {
		return "", func() {}, err
	}
	return tmp, func() { _ = os.RemoveAll(tmp) }, nil
}

// authority makes the test authority in dir, or reuses the one a previous run made
// there (so a restarted server takes the same agents back, and renews what it issued).
func authority(dir string) (*fleetserver.PKI, error) {
	have := 0
	for _, f := range []string{"ca.pem", "ca-key.pem", "server.pem", "server-key.pem", "client.pem", "client-key.pem"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			have++
		}
	}
	if have == 6 {
		return fleetserver.LoadPKI(dir)
	}
	return fleetserver.NewPKI(dir, "yuzu-testserver")
}

// quote makes a value safe to paste into a POSIX shell.
func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// knownDefinitions are the agent's workflows and, with a plugin dir, every definition
// its plugins serve, by id: a plugin runs once here to say which.
func knownDefinitions(ctx context.Context, pluginDir string) (map[string]definition.Definition, error) {
	defs := map[string]definition.Definition{}
	wfs, err := definitions.Workflows()
	if err != nil {
		return nil, err
	}
	for _, d := range wfs {
		defs[d.ID] = d
	}
	if pluginDir == "" {
		return defs, nil
	}
	tmp, err := os.MkdirTemp("", "yuzu-testserver-data-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	sup, err := supervisor.New(supervisor.Options{PluginDir: pluginDir, DataDir: tmp})
	if err != nil {
		return nil, err
	}
	defer sup.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, name := range sup.Plugins() {
		m, err := sup.Describe(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", name, err)
		}
		served, err := m.ServedDefinitions()
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", name, err)
		}
		for _, d := range served {
			defs[d.ID] = d
		}
	}
	return defs, nil
}

// read runs the typed lines until quit, the end of input (after the answers) or a
// signal.
func (c *console) read(ctx context.Context, in io.Reader) error {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		if err := sc.Err(); err != nil {
			c.printf("yuzu-testserver: reading the input: %v\n", err)
		}
	}()
	for {
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
			c.printf("yuzu-testserver: stopping\n")
			return nil
		}
		if !ok {
			c.wait(ctx, time.Minute)
			return nil
		}
		ws, err := words.Split(line)
		if err != nil {
			c.printf("yuzu-testserver: %s\n", rows.Printable(err.Error()))
			continue
		}
		if len(ws) == 0 || strings.HasPrefix(ws[0], "#") {
			continue
		}
		switch ws[0] {
		case "send":
			c.send(ctx, ws[1:])
		case "wait":
			d := time.Minute
			if len(ws) > 1 {
				n, err := strconv.Atoi(ws[1])
				if err != nil || n <= 0 {
					c.printf("yuzu-testserver: wait takes a whole number of seconds\n")
					continue
				}
				d = time.Duration(n) * time.Second
			}
			c.wait(ctx, d)
		case "agents":
			c.agents()
		case "approve", "pending", "issued", "revoke":
			c.certificates(ws)
		case "publish-agent":
			c.publishAgent(ws[1:])
		case "updates":
			for _, u := range c.srv.UpdateChecks() {
				offered := u.Offered
				if offered == "" {
					offered = "nothing"
				}
				c.printf("%s %s running %s, offered %s\n", u.At.UTC().Format(time.RFC3339), rows.Printable(u.AgentID), rows.Printable(u.Current), offered)
			}
		case "publish":
			c.publish(ws[1:])
		case "deploy":
			c.deploy(ctx, ws[1:])
		case "help":
			c.printf("%s", help)
		case "quit", "exit":
			return nil
		default:
			c.printf("yuzu-testserver: unknown command %s (help lists them)\n", rows.Printable(ws[0]))
		}
	}
}

// send pushes one command, waiting up to 30 s for an agent to connect, and then for
// its answer up to answerWait.
func (c *console) send(ctx context.Context, args []string) {
	if len(args) == 0 {
		c.printf("yuzu-testserver: send needs PLUGIN ACTION or DEFINITION-ID\n")
		return
	}
	cmd := &agentv1.CommandRequest{Parameters: map[string]string{}}
	rest := args[1:]
	def, isDef := c.defs[args[0]]
	if strings.Contains(args[0], ".") {
		if !isDef {
			c.printf("yuzu-testserver: unknown definition %s (the workflows and, with -plugin-dir, the plugins' definitions are known)\n", rows.Printable(args[0]))
			return
		}
		cmd.Plugin, cmd.Action = def.Plugin, def.Action
	} else {
		if len(args) < 2 {
			c.printf("yuzu-testserver: send %s: missing ACTION\n", rows.Printable(args[0]))
			return
		}
		cmd.Plugin, cmd.Action, rest = args[0], args[1], args[2:]
	}
	for _, kv := range rest {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			c.printf("yuzu-testserver: parameter %q: want key=value\n", rows.Printable(kv))
			return
		}
		if _, dup := cmd.Parameters[k]; dup {
			c.printf("yuzu-testserver: parameter %q given twice\n", rows.Printable(k))
			return
		}
		cmd.Parameters[k] = v
	}
	if isDef {
		// The server checks what it sends, as a real one does; the agent checks again.
		if err := def.Validate(cmd.Parameters); err != nil {
			c.printf("yuzu-testserver: %s: %s\n", def.ID, rows.Printable(err.Error()))
			return
		}
		// The plugin versions the definition needs travel with the command, for the
		// agent to check before it runs it (docs/fleet.md).
		reqs, err := def.Requirements()
		if err != nil {
			c.printf("yuzu-testserver: %s\n", rows.Printable(err.Error()))
			return
		}
		var versioned []string
		for _, r := range reqs {
			if r.MinVersion != "" {
				versioned = append(versioned, r.String())
			}
		}
		if len(versioned) > 0 {
			cmd.Parameters["__requires__"] = strings.Join(versioned, ",")
		}
	}
	c.next++
	cmd.CommandId = fmt.Sprintf("%s-%d", c.idPrefix, c.next)
	if !slices.ContainsFunc(c.srv.Agents(), func(a fleetserver.Agent) bool { return a.Subscribed }) {
		c.printf("yuzu-testserver: no agent is connected yet; waiting up to 30s for one\n")
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c.printf("-> %s: %s %s%s\n", cmd.CommandId, rows.Printable(cmd.Plugin), rows.Printable(cmd.Action), paramText(cmd.Parameters))
	if err := c.srv.Send(sctx, cmd); err != nil {
		c.printf("yuzu-testserver: %s not sent: %v\n", cmd.CommandId, err)
		return
	}
	c.sent = append(c.sent, cmd.CommandId)
	// One command at a time, as a person reads them: the next line waits for this
	// answer (the agent would run them side by side), for a while.
	actx, cancel := context.WithTimeout(ctx, answerWait)
	defer cancel()
	if _, err := c.srv.WaitTerminal(actx, cmd.CommandId); err != nil && ctx.Err() == nil {
		c.printf("yuzu-testserver: %s has not finished within %s; its answer prints when it comes (wait waits for it)\n", cmd.CommandId, answerWait)
	}
}

// answerWait is how long send waits for an answer before it reads the next line.
const answerWait = 30 * time.Second

// wait waits until every command sent has its terminal answer, at most d.
func (c *console) wait(ctx context.Context, d time.Duration) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for _, id := range c.sent {
		if _, err := c.srv.WaitTerminal(wctx, id); err != nil {
			c.printf("yuzu-testserver: %v\n", err)
			return
		}
	}
}

// agents lists the registered agents.
// publishAgent offers an agent bundle: publish-agent FILE [mandatory] [share=N].
func (c *console) publishAgent(args []string) {
	if len(args) == 0 {
		c.printf("yuzu-testserver: publish-agent FILE [mandatory] [share=N]\n")
		return
	}
	payload, err := os.ReadFile(args[0])
	if err != nil {
		c.printf("yuzu-testserver: %s\n", rows.Printable(err.Error()))
		return
	}
	m, err := update.IndexOf(payload)
	if err != nil {
		c.printf("yuzu-testserver: %s: %s\n", rows.Printable(args[0]), rows.Printable(err.Error()))
		return
	}
	b := fleetserver.AgentBuild{OS: m.OS, Arch: fleetserver.PlatformArch(m.Arch), Version: m.Version, Payload: payload, Share: 100}
	for _, a := range args[1:] {
		switch {
		case a == "mandatory":
			b.Mandatory = true
		case strings.HasPrefix(a, "share="):
			n, err := strconv.Atoi(strings.TrimPrefix(a, "share="))
			if err != nil || n < 0 || n > 100 {
				c.printf("yuzu-testserver: %s: want a percentage from 0 to 100\n", rows.Printable(a))
				return
			}
			b.Share = n
		default:
			c.printf("yuzu-testserver: publish-agent: unknown word %s\n", rows.Printable(a))
			return
		}
	}
	c.srv.PublishAgent(b)
	c.printf("published agent %s for %s/%s (%d bytes, mandatory %v, share %d%%)\n", m.Version, m.OS, m.Arch, len(payload), b.Mandatory, b.Share)
}

// certificates runs approve, pending, issued and revoke.
func (c *console) certificates(ws []string) {
	if c.issuer == nil {
		c.printf("yuzu-testserver: %s: no certificates with -no-tls\n", ws[0])
		return
	}
	switch {
	case ws[0] == "approve" && len(ws) == 2:
		if c.issuer.Approve(ws[1]) {
			c.printf("approved %s: it is enrolled at its next registration\n", rows.Printable(ws[1]))
		} else {
			c.printf("approved %s (not pending now: its next enrollment goes through)\n", rows.Printable(ws[1]))
		}
	case ws[0] == "pending" && len(ws) == 1:
		p := c.issuer.Pending()
		if len(p) == 0 {
			c.printf("no enrollment is pending\n")
		}
		for _, id := range p {
			c.printf("pending %s\n", rows.Printable(id))
		}
	case ws[0] == "issued" && len(ws) == 1:
		list := c.issuer.Issued()
		if len(list) == 0 {
			c.printf("no certificate issued yet\n")
		}
		for _, i := range list {
			kind := "enrollment"
			if i.Renewal {
				kind = "renewal"
			}
			c.printf("%s serial %s %s, valid %s to %s\n", rows.Printable(i.AgentID), i.Serial, kind,
				i.NotBefore.UTC().Format(time.RFC3339), i.NotAfter.UTC().Format(time.RFC3339))
		}
	case ws[0] == "revoke" && len(ws) == 2:
		c.issuer.Revoke(strings.ToLower(ws[1]))
		c.printf("revoked serial %s: a connection presenting it is refused\n", rows.Printable(ws[1]))
	default:
		c.printf("yuzu-testserver: %s: see help\n", ws[0])
	}
}

func (c *console) agents() {
	list := c.srv.Agents()
	if len(list) == 0 {
		c.printf("no agent has registered yet\n")
		return
	}
	for _, a := range list {
		info := a.Registration.GetInfo()
		mark := " "
		if a.Subscribed {
			mark = "*"
		}
		var plugins []string
		for _, p := range info.GetPlugins() {
			plugins = append(plugins, p.GetName()+" "+p.GetVersion())
		}
		c.printf("%s %s %s %s/%s agent %s plugins: %s\n", mark, rows.Printable(info.GetAgentId()), rows.Printable(info.GetHostname()),
			rows.Printable(info.GetPlatform().GetOs()), rows.Printable(info.GetPlatform().GetArch()), rows.Printable(info.GetAgentVersion()),
			rows.Printable(strings.Join(plugins, ", ")))
	}
}

func paramText(params map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(params)) {
		fmt.Fprintf(&b, " %s=%s", rows.Printable(k), rows.Printable(params[k]))
	}
	return b.String()
}

// publish makes a plugin build available for download.
func (c *console) publish(args []string) {
	if len(args) != 2 {
		c.printf("yuzu-testserver: publish needs FILE VERSION\n")
		return
	}
	b, err := c.srv.PublishFile(args[0], args[1])
	if err != nil {
		c.printf("yuzu-testserver: publish: %s\n", rows.Printable(err.Error()))
		return
	}
	signed := "unsigned"
	if len(b.Signature) > 0 {
		signed = "signed"
	}
	c.mu.Lock()
	c.builds[b.Name+" "+b.Version] = b
	c.mu.Unlock()
	c.printf("published %s %s for %s/%s, %d bytes, sha256 %s, %s\n", rows.Printable(b.Name), rows.Printable(b.Version), b.OS, b.Arch, len(b.Data), b.SHA256, signed)
}

// deploy has agents install a published build, and prints each one's answer.
func (c *console) deploy(ctx context.Context, args []string) {
	if len(args) < 2 {
		c.printf("yuzu-testserver: deploy needs NAME VERSION [AGENT-ID ...]\n")
		return
	}
	c.mu.Lock()
	b := c.builds[args[0]+" "+args[1]]
	c.mu.Unlock()
	if b == nil {
		c.printf("yuzu-testserver: no build %s %s is published (publish FILE VERSION first)\n", rows.Printable(args[0]), rows.Printable(args[1]))
		return
	}
	targets := args[2:]
	if len(targets) == 0 {
		for _, a := range c.srv.Agents() {
			if a.Subscribed {
				targets = append(targets, a.Registration.GetInfo().GetAgentId())
			}
		}
	}
	if len(targets) == 0 {
		c.printf("yuzu-testserver: no agent is connected\n")
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	c.printf("-> deploying %s %s to %d agents\n", rows.Printable(b.Name), rows.Printable(b.Version), len(targets))
	res, err := c.srv.Deploy(dctx, b, targets)
	if err != nil {
		c.printf("yuzu-testserver: deploy: %s\n", rows.Printable(err.Error()))
	}
	for _, id := range slices.Sorted(maps.Keys(res)) {
		c.printf("   %s: %s %s\n", rows.Printable(id), res[id].Terminal.GetStatus(), rows.Printable(strings.Join(res[id].Rows, "; ")))
	}
}
