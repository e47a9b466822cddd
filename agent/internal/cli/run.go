package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/identity"
	"github.com/yuzugo/yuzu/agent/internal/journal"
	"github.com/yuzugo/yuzu/agent/internal/metrics"
	"github.com/yuzugo/yuzu/agent/internal/plugincmd"
	"github.com/yuzugo/yuzu/agent/internal/session"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// boolFlags are the flags that take no value (or --name=true/false), with their
// environment variables.
var boolFlags = map[string]string{
	"no-tls":           "YUZU_NO_TLS",
	"tls-system-roots": "YUZU_TLS_SYSTEM_ROOTS",
}

// parseBool reads a switch's value: 1/true/yes/on or 0/false/no/off, any case.
func parseBool(v string) (on, ok bool) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// boolFlag is a switch's value: the flag when given, else its environment variable
// (unset or empty is off), anything unreadable a usage error.
func boolFlag(given map[string]bool, name string, getenv func(string) string) (bool, error) {
	if on, ok := given[name]; ok {
		return on, nil
	}
	env := boolFlags[name]
	v := getenv(env)
	if v == "" {
		return false, nil
	}
	on, ok := parseBool(v)
	if !ok {
		return false, usagef("%s=%s: want 1, true, yes, on or 0, false, no, off", env, rows.Printable(v))
	}
	return on, nil
}

// Defaults of run.
const (
	defaultServer    = "localhost:50051"
	defaultHeartbeat = 30 * time.Second
	// fleetDir is the journal's directory inside the data dir, and spoolDir the
	// answer spool's inside it.
	fleetDir = "fleet"
	spoolDir = "spool"
	// defaultIdleStop is how long run leaves a plugin's child with no command before
	// it stops it (docs/agent.md "Lazy start and idle stop").
	defaultIdleStop = 5 * time.Minute
	// catalogWatch is how often a long-lived agent (run, shell) looks at its plugin
	// catalog's file for a change another process made: one stat each time.
	catalogWatch = 2 * time.Second
)

// parseIdleStop reads --idle-stop: "DURATION" for every plugin, or entries
// "NAME:DURATION" joined with ";" (NAME * for every plugin not named), a later entry
// for the same name replacing an earlier one (the file's per-plugin idle-stop comes
// after its idle-stop). A DURATION is a Go duration or a number of seconds, as for
// --timeout; 0 means never. The map always has "*": the default unless an entry sets it.
func parseIdleStop(v string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{"*": defaultIdleStop}
	if v == "" {
		return out, nil
	}
	for _, e := range strings.Split(v, ";") {
		name, d, ok := strings.Cut(e, ":")
		if !ok {
			name, d = "*", e
		}
		if name != "*" && !sdk.ValidName(name) {
			return nil, usagef("--idle-stop %q: %q is not a plugin name or *", rows.Printable(v), rows.Printable(name))
		}
		dur, err := idleDuration(d)
		if err != nil {
			return nil, usagef("--idle-stop %q: %s: %v", rows.Printable(v), rows.Printable(e), err)
		}
		out[name] = dur
	}
	return out, nil
}

// idleDuration is one --idle-stop duration: 0 (any unit) is never.
func idleDuration(v string) (time.Duration, error) {
	if d, err := time.ParseDuration(v); err == nil && d == 0 {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n == 0 {
		return 0, nil
	}
	d, err := parseTimeout(v)
	if err != nil {
		return 0, fmt.Errorf("%v (or 0 for never)", err)
	}
	return d, nil
}

// runSettings are run's flags, checked.
type runSettings struct {
	server                  string
	heartbeat               time.Duration
	identity                *identity.Source // nil with --no-tls
	spoolAnswer, spoolTotal int64            // bytes; negative: keep none
	idleStop                map[string]time.Duration
	// token is the enrollment token, from --enrollment-token or the file
	// --enrollment-token-file names.
	token string
	// tokenExposed says who else can read the token file (nil: no one).
	tokenExposed error
	// updateInterval (negative: never) and updateSplay time the agent's update
	// checks (0: the session's defaults).
	updateInterval, updateSplay time.Duration
}

// maxSpoolMiB bounds the spool flags: a terabyte of rows on disk is past any purpose.
const maxSpoolMiB = 1 << 20

// spoolBytes reads a spool flag: a whole number of MiB, 0 meaning none (negative
// bytes for the session), empty meaning the default (0 bytes for the session).
func spoolBytes(flag, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > maxSpoolMiB {
		return 0, usagef("--%s %q: want a whole number of MiB from 0 to %d", flag, rows.Printable(v), maxSpoolMiB)
	}
	if n == 0 {
		return -1, nil
	}
	return n << 20, nil
}

// checkRun validates run's flags; every problem is a usage error except a TLS file that
// cannot be used.
func checkRun(cfg config) (runSettings, error) {
	rs := runSettings{server: cfg.server, heartbeat: defaultHeartbeat}
	if rs.server == "" {
		rs.server = defaultServer
	}
	if err := checkHostPort(rs.server); err != nil {
		return rs, usagef("--server %q: %v", rows.Printable(rs.server), err)
	}
	if cfg.heartbeat != "" {
		d, err := parseTimeout(cfg.heartbeat)
		if err == nil && d < time.Second {
			err = errors.New("must be at least 1s")
		}
		if err != nil {
			return rs, usagef("--heartbeat %q: %v", rows.Printable(cfg.heartbeat), err)
		}
		rs.heartbeat = d
	}
	if cfg.metricsListen != "" {
		if err := checkHostPort(cfg.metricsListen); err != nil {
			return rs, usagef("--metrics-listen %q: %v", rows.Printable(cfg.metricsListen), err)
		}
	}
	var err error
	if rs.idleStop, err = parseIdleStop(cfg.idleStop); err != nil {
		return rs, err
	}
	if cfg.updateInterval != "" {
		d, err := parseTimeout(cfg.updateInterval)
		if err == nil && cfg.updateInterval == "0" {
			d = -1
		} else if err == nil && d < time.Minute {
			err = errors.New("must be at least 1m, or 0 for never")
		}
		if err != nil {
			return rs, usagef("--update-check-interval %q: %v", rows.Printable(cfg.updateInterval), err)
		}
		rs.updateInterval = d
	}
	if cfg.updateSplay != "" {
		d, err := parseTimeout(cfg.updateSplay)
		if err != nil {
			return rs, usagef("--update-splay %q: %v", rows.Printable(cfg.updateSplay), err)
		}
		rs.updateSplay = d
	}
	rs.token = cfg.enrollmentToken
	if cfg.enrollmentTokenFile != "" {
		if cfg.enrollmentToken != "" {
			return rs, usagef("--enrollment-token and --enrollment-token-file both give the enrollment token: keep one")
		}
		if rs.token, rs.tokenExposed, err = identity.ReadTokenFile(cfg.enrollmentTokenFile); err != nil {
			return rs, fmt.Errorf("--enrollment-token-file: %w", err)
		}
	}
	if rs.spoolAnswer, err = spoolBytes("spool-answer-mib", cfg.spoolAnswer); err != nil {
		return rs, err
	}
	if rs.spoolTotal, err = spoolBytes("spool-total-mib", cfg.spoolTotal); err != nil {
		return rs, err
	}
	if cfg.noTLS {
		if cfg.caCert != "" || cfg.clientCert != "" || cfg.clientKey != "" || cfg.tlsSystemRoots {
			return rs, usagef("--no-tls turns TLS off: it cannot go with --ca-cert, --tls-system-roots, --client-cert or --client-key")
		}
		return rs, nil
	}
	files := identity.Files{CA: cfg.caCert, SystemRoots: cfg.tlsSystemRoots, ClientCert: cfg.clientCert, ClientKey: cfg.clientKey}
	if err := files.Check(); err != nil {
		return rs, err
	}
	rs.identity = identity.New(files, filepath.Join(cfg.dataDir, certsDir))
	return rs, nil
}

// certsDir is the data dir's directory of the identity the agent enrolls for.
const certsDir = "certs"

// checkHostPort accepts host:port with a port from 1 to 65535 (the host may be empty
// only for a listen address, which then listens on every interface).
func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want HOST:PORT")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}

// runFleet is `yuzu-agent run`: the agent connected to its fleet server until SIGINT
// or SIGTERM.
func runFleet(ctx context.Context, cfg config, log hclog.Logger, args []string, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		return 0, usagef("run takes no arguments, got %q", rows.Printable(args[0]))
	}
	rs, err := checkRun(cfg)
	var usage *usageError
	if errors.As(err, &usage) {
		return 0, err
	}
	fail := func(err error) (int, error) {
		fmt.Fprintln(stderr, "yuzu-agent:", rows.Printable(err.Error()))
		return exitFail, nil
	}
	if err != nil {
		return fail(err)
	}
	for _, w := range settingsWarnings(cfg, rs) {
		log.Warn(w)
	}
	var listener net.Listener
	if cfg.metricsListen != "" {
		if listener, err = net.Listen("tcp", cfg.metricsListen); err != nil {
			return fail(fmt.Errorf("--metrics-listen: %w", err))
		}
		defer listener.Close()
	}
	if cfg.agentID, err = ensureAgentID(cfg); err != nil {
		return fail(err)
	}
	// The answer spool lives beside the journal's segments (session.Options.SpoolDir).
	j, err := journal.Open(filepath.Join(cfg.dataDir, fleetDir), spoolDir)
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := j.Close(); err != nil {
			log.Error("command journal: last write failed", "error", err)
		}
	}()
	var keys *trust.Keys
	sup, err := newSupervisorWith(cfg, log, func(o *supervisor.Options) { o.IdleStop, keys = rs.idleStop, o.Keys })
	if err != nil {
		return fail(err)
	}
	defer sup.Close()

	// The series are kept even without --metrics-listen: `yuzu-agent status` reads
	// the connection state and queue depth from them.
	m := metrics.New()
	m.WatchPlugins(sup.Status)
	var sess atomic.Pointer[session.Session] // set below, once the session exists
	stopStatus, err := serveStatus(ctx, cfg, rs, sup, m, &sess, log)
	if err != nil {
		return fail(err)
	}
	defer stopStatus()
	if listener != nil {
		mctx, stopMetrics := context.WithCancel(ctx)
		defer stopMetrics()
		go func() {
			if err := m.Serve(mctx, listener); err != nil {
				log.Error("metrics endpoint stopped", "error", err)
			}
		}()
		log.Info("metrics endpoint", "address", listener.Addr().String()+"/metrics")
	}

	// Each plugin starts once, so that its manifest is known for the registration;
	// one with an idle stop is stopped again at once and starts on its first command.
	startCtx, cancel := context.WithTimeout(ctx, startWait)
	sup.Prime(startCtx)
	cancel()
	for _, st := range sup.Status() {
		if !st.State.Ready() {
			log.Warn("plugin not running at start", "plugin", st.Name, "state", string(st.State), "error", rows.Printable(st.LastError))
		}
	}
	// The catalog is followed while the agent runs: plugins add tells this agent at
	// once (its status socket), other writers are seen within a watch period.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go sup.Watch(watchCtx, catalogWatch)
	log.Info("agent starting", "agent_id", cfg.agentID, "version", Version, "server", rs.server, "tls", rs.identity != nil, "plugins", strings.Join(sup.Plugins(), ","))
	updater, trial, confirm := newUpdater(cfg, keys, log.Named("update"))
	logCertificate(log, rs, m)
	flog := log.Named("fleet")
	s := session.New(session.Options{
		Server:           rs.server,
		Identity:         rs.identity,
		EnrollmentToken:  rs.token,
		Heartbeat:        rs.heartbeat,
		Timeout:          cfg.timeout,
		AgentID:          cfg.agentID,
		AgentVersion:     Version,
		Plugins:          sup,
		Journal:          j,
		SpoolDir:         filepath.Join(cfg.dataDir, fleetDir, spoolDir),
		SpoolAnswerBytes: rs.spoolAnswer,
		SpoolTotalBytes:  rs.spoolTotal,
		Metrics:          m,
		Logger:           flog,
		InstallPlugin:    plugincmd.FleetInstaller(pluginEnv(cfg, flog, io.Discard, io.Discard), flog, sup, keys),
		Update:           updater,
		UpdateInterval:   rs.updateInterval,
		UpdateSplay:      rs.updateSplay,
		OnRegistered:     confirm,
	})
	sess.Store(s)
	if !trial {
		readyForService(log, "running")
	}
	if err := s.Run(ctx); err != nil {
		if errors.Is(err, session.ErrUpdated) {
			log.Info("stopped to be restarted on the new version", "exit", exitUpdated)
			return exitUpdated, nil
		}
		log.Error("stopping for good", "error", rows.Printable(err.Error()))
		return fail(err)
	}
	log.Info("stopped")
	return exitOK, nil
}

// ensureAgentID returns --agent-id, else the id kept in the data dir, else a new
// random UUID which it keeps there for the next start (identity.KeepAgentID).
func ensureAgentID(cfg config) (string, error) {
	if cfg.agentID != "" {
		return cfg.agentID, nil
	}
	return identity.KeepAgentID(cfg.dataDir)
}

// logCertificate says at start which client certificate the agent presents and what is
// wrong with it, or that it will enroll; the metrics page gets its end.
func logCertificate(log hclog.Logger, rs runSettings, m *metrics.Metrics) {
	if rs.identity == nil {
		return
	}
	now := time.Now()
	leaf, ok, err := rs.identity.Current()
	switch {
	case err != nil:
		log.Error("client certificate", "problem", rows.Printable(err.Error()))
	case ok:
		m.Certificate(leaf.NotAfter)
		if p := leaf.Problem(now); p != "" {
			log.Warn(p, "certificate", rows.Printable(identity.Describe(leaf, now)))
		} else {
			log.Info("client certificate", "certificate", rows.Printable(identity.Describe(leaf, now)))
		}
		if leaf.Bad(now) && leaf.Source == "enrolled" {
			log.Info("the enrolled certificate is not valid now: the agent enrolls again (a new CSR with the enrollment token)")
		}
	case rs.token != "":
		log.Info("no client certificate: the agent enrolls with its token (a CSR for a key of its own)", "dir", rs.identity.Dir())
	default:
		log.Info("no client certificate and no enrollment token: the agent asks the server for a certificate with a CSR, which it may refuse")
	}
}
