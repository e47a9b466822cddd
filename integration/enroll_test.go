//go:build linux

package integration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yuzugo/yuzu/integration/fleetserver"
)

// Enrollment, renewal and rotation (docs/fleet.md "Identity: enrollment, renewal,
// rotation"): the test fleet server signs CSRs with its authority (fleetserver.Issuer).

const enrollToken = "t0ken-for-enrollment"

// enrollFleet is a fleet whose server enrolls agents: an agent gets the authority and
// the token, no client certificate.
type enrollFleet struct {
	*fleet
	iss       *fleetserver.Issuer
	tokenFile string
}

func newEnrollFleet(t *testing.T, lifetime time.Duration, mode fleetserver.Approval, plugins ...string) *enrollFleet {
	t.Helper()
	pki, err := fleetserver.NewPKI(filepath.Join(t.TempDir(), "pki"), "fleet")
	if err != nil {
		t.Fatal(err)
	}
	iss := pki.NewIssuer(lifetime, mode)
	srv, err := fleetserver.Start("127.0.0.1:0", fleetserver.Options{TLS: iss.ServerTLS(), Issuer: iss, EnrollmentToken: enrollToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeFile(t, tokenFile, enrollToken+"\n", 0o600)
	return &enrollFleet{fleet: &fleet{t: t, pki: pki, srv: srv, w: newWorld(t, plugins...)}, iss: iss, tokenFile: tokenFile}
}

// start runs the agent with the authority and the token only.
func (f *enrollFleet) start(extra ...string) *agentProc {
	f.t.Helper()
	args := append([]string{"--plugin-dir", f.w.pluginDir, "--data-dir", f.w.dataDir, "run",
		"--server", f.srv.Addr(), "--ca-cert", f.pki.CA, "--enrollment-token-file", f.tokenFile}, extra...)
	a := startAgentEnv(f.t, baseEnv(), args...)
	f.mu.Lock()
	f.last, f.timeout = a, 600*time.Second
	f.mu.Unlock()
	return a
}

// subscribed waits until the agent holds the command stream.
func (f *enrollFleet) subscribed(a *agentProc, within time.Duration) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := f.srv.WaitSubscribed(ctx); err != nil {
		f.t.Fatalf("the agent did not subscribe: %v\n%s", err, a.stderr.String())
	}
}

// identityKey is the key the agent keeps in its identity file, PEM.
func (f *enrollFleet) identityKey(t *testing.T) string {
	t.Helper()
	b := readFile(t, filepath.Join(f.w.dataDir, "certs", "identity.pem"))
	block, _ := pem.Decode([]byte(b))
	if block == nil || block.Type != "EC PRIVATE KEY" {
		t.Fatalf("the identity file does not start with the key:\n%s", b)
	}
	return string(pem.EncodeToMemory(block))
}

// TestEnrollment: an agent given only the server, the authority and a token enrolls
// (a CSR with the token), connects again at once presenting the certificate issued to
// it, and answers commands. Its key is in its identity file (0600 in a 0700
// directory) and nowhere on the wire or in its log; once enrolled it sends neither
// the token nor a CSR, and a restart keeps the identity.
func TestEnrollment(t *testing.T) {
	t.Parallel()
	f := newEnrollFleet(t, 24*time.Hour, fleetserver.ApproveAuto, tagsBin)
	a := f.start()
	f.subscribed(a, 60*time.Second)
	ctx := testCtx(t, 60*time.Second)
	expectResult(t, f.do(t, ctx, command("after-enroll", "tags", "set", "key=enrolled", "value=yes")), success, 0, "tag_set|enrolled|yes")
	issued := f.iss.Issued()
	if len(issued) != 1 || issued[0].Renewal || !f.iss.Seen(issued[0].Serial) {
		t.Fatalf("issued %+v: want one enrollment, presented on the command stream", issued)
	}
	key := f.identityKey(t)
	for _, p := range []string{filepath.Join(f.w.dataDir, "certs"), filepath.Join(f.w.dataDir, "certs", "identity.pem")} {
		fi, err := os.Stat(p)
		if want := os.FileMode(0o600); err != nil || fi.IsDir() && fi.Mode().Perm() != 0o700 || !fi.IsDir() && fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v", p, fi.Mode(), err)
		}
	}
	keyBody := strings.Join(strings.Split(key, "\n")[1:3], "") // base64, one line of it at least
	regs := f.srv.Registrations()
	for i, r := range regs {
		b, _ := proto.Marshal(r)
		if strings.Contains(string(b), keyBody[:40]) || strings.Contains(r.GetCsrPem(), "PRIVATE") {
			t.Errorf("registration %d carries the key", i)
		}
	}
	if first := regs[0]; first.GetEnrollmentToken() != enrollToken || !strings.Contains(first.GetCsrPem(), "CERTIFICATE REQUEST") {
		t.Errorf("the first registration: token %q, CSR %q", first.GetEnrollmentToken(), first.GetCsrPem())
	}
	for i, r := range regs[1:] {
		if r.GetEnrollmentToken() != "" || r.GetCsrPem() != "" {
			t.Errorf("registration %d after the enrollment sent the token or a CSR", i+2)
		}
	}
	if strings.Contains(a.stderr.String(), keyBody[:40]) || strings.Contains(a.stderr.String(), enrollToken) {
		t.Errorf("the agent's log holds its key or the token:\n%s", a.stderr.String())
	}
	st := runAgent(t, nil, "--data-dir", f.w.dataDir, "status")
	if st.code != 0 || !regexp.MustCompile(`(?m)^certificate: enrolled certificate CN=[-0-9a-f]+, issued by CN=fleet test CA, serial [0-9a-f]+\.*, valid until \S+ \(2[0-9] h left\)$`).MatchString(st.stdout) {
		t.Errorf("status after enrolling:\n%s", st)
	}
	if code := a.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	a = f.start()
	f.subscribed(a, 60*time.Second)
	expectResult(t, f.do(t, ctx, command("after-restart", "tags", "get", "key=enrolled")), success, 0, "tag|enrolled|yes")
	if n := len(f.iss.Issued()); n != 1 {
		t.Errorf("%d certificates issued after a restart, want the one", n)
	}
	if f.identityKey(t) != key {
		t.Error("a restart changed the key")
	}
	a.stop(t)
}

// TestEnrollmentPendingAndDenied: a pending enrollment is asked again after the
// backoff, status says so, and once the operator approves it the agent is enrolled
// without a restart; a denied one stops the agent (exit 1) with the server's reason,
// after one registration.
func TestEnrollmentPendingAndDenied(t *testing.T) {
	t.Parallel()
	f := newEnrollFleet(t, 24*time.Hour, fleetserver.ApprovePending, tagsBin)
	a := f.start()
	waitFor(t, 60*time.Second, "the enrollment to wait for approval", func() bool { return len(f.iss.Pending()) == 1 })
	waitFor(t, 30*time.Second, "a second pending registration (asked again)", func() bool { return len(f.srv.Registrations()) >= 2 })
	st := runAgent(t, nil, "--data-dir", f.w.dataDir, "status")
	if st.code != 1 || !strings.Contains(st.stdout, "disconnected: enrollment pending approval since ") || !strings.Contains(st.stdout, "certificate: none (enrollment pending)") {
		t.Errorf("status while pending:\n%s", st)
	}
	keys := map[string]bool{}
	for _, r := range f.srv.Registrations() {
		block, _ := pem.Decode([]byte(r.GetCsrPem()))
		if block == nil {
			t.Fatalf("a pending registration without a CSR: %q", r.GetCsrPem())
		}
		csr, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalPKIXPublicKey(csr.PublicKey)
		keys[string(der)] = true
	}
	if len(keys) != 1 {
		t.Errorf("%d different keys asked for while pending, want the same one asked again", len(keys))
	}
	f.iss.Approve(f.iss.Pending()[0])
	f.subscribed(a, 90*time.Second)
	ctx := testCtx(t, 60*time.Second)
	expectResult(t, f.do(t, ctx, command("approved", "tags", "count")), success, 0, "count|0")
	if !strings.Contains(a.stderr.String(), "enrollment pending approval on the fleet server; retrying later") {
		t.Errorf("the log does not say the enrollment was pending:\n%s", a.stderr.String())
	}
	a.stop(t)

	d := newEnrollFleet(t, 24*time.Hour, fleetserver.ApproveDeny, tagsBin)
	b := d.start()
	if code := b.wait(t, 60*time.Second); code != 1 {
		t.Errorf("a denied agent exited %d, want 1", code)
	}
	if !strings.Contains(b.stderr.String(), "the fleet server refused the registration: enrollment denied by the fleet operator") {
		t.Errorf("the denied agent's log:\n%s", b.stderr.String())
	}
	if n := len(d.srv.Registrations()); n != 1 {
		t.Errorf("%d registrations from a denied agent, want 1", n)
	}
}

// TestRenewalUnderLoad: a 60 s certificate is renewed before it expires while 1,000
// commands flow: each appends its own line to a file, and the file ends with every
// line once (0 lost, 0 run twice); the server issued a renewal, for a new key, and
// saw its serial on the command stream.
func TestRenewalUnderLoad(t *testing.T) {
	t.Parallel()
	f := newEnrollFleet(t, 60*time.Second, fleetserver.ApproveAuto, "yuzu-plugin-filesystem")
	a := f.start()
	f.subscribed(a, 60*time.Second)
	firstKey := f.identityKey(t)
	target := filepath.Join(t.TempDir(), "lines.txt")
	writeFile(t, target, "", 0o644)
	ctx := testCtx(t, 5*time.Minute)
	const n = 1000
	// 55 ms apart, 55 s in all: the test issuer dates a certificate a minute back, so
	// one of 60 s is due at two thirds of its 120 s less up to 12 s of jitter, 8 to
	// 20 s after it was issued, and the flow spans several renewals.
	start := time.Now()
	for i := range n {
		c := command(fmt.Sprintf("renew-%04d", i), "filesystem", "append", "path="+target, fmt.Sprintf("content=line %04d", i))
		if err := f.srv.Send(ctx, c); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * 55 * time.Millisecond)))
	}
	for i := range n {
		id := fmt.Sprintf("renew-%04d", i)
		r, err := f.srv.WaitTerminal(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if r.Terminal.GetStatus() != success {
			t.Errorf("%s: %v", id, r.Terminal)
		}
	}
	lines := strings.Split(strings.TrimSuffix(readFile(t, target), "\n"), "\n")
	seen := map[string]int{}
	for _, l := range lines {
		seen[l]++
	}
	if len(lines) != n || len(seen) != n {
		t.Errorf("%d lines, %d distinct, want %d each once", len(lines), len(seen), n)
	}
	var renewal *fleetserver.Issued
	for _, i := range f.iss.Issued() {
		if i.Renewal {
			renewal = &i
		}
	}
	if renewal == nil || !f.iss.Seen(renewal.Serial) {
		t.Fatalf("issued %+v: want a renewal presented on a later connection", f.iss.Issued())
	}
	if f.identityKey(t) == firstKey {
		t.Error("the renewal kept the key")
	}
	if !strings.Contains(a.stderr.String(), "certificate renewed; connecting again with it") {
		t.Errorf("the log does not tell the renewal:\n%s", a.stderr.String())
	}
	a.stop(t)
}

// TestRotatedFiles: the operator replaces the CA and client certificate files on disk
// with a new authority's, and the server moves to that authority: the agent's next
// connection uses the new files, without a restart.
func TestRotatedFiles(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin)
	files := t.TempDir()
	ca, cert, key := filepath.Join(files, "ca.pem"), filepath.Join(files, "client.pem"), filepath.Join(files, "client-key.pem")
	put := func(p *fleetserver.PKI) {
		for src, dst := range map[string]string{p.CA: ca, p.ClientCert: cert, p.ClientKey: key} {
			writeFile(t, dst+".new", readFile(t, src), 0o600)
			if err := os.Rename(dst+".new", dst); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(f.pki)
	a := startAgentEnv(t, baseEnv(), "--plugin-dir", f.w.pluginDir, "--data-dir", f.w.dataDir, "run",
		"--server", f.srv.Addr(), "--ca-cert", ca, "--client-cert", cert, "--client-key", key)
	ctx := testCtx(t, 2*time.Minute)
	if err := f.srv.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	expectResult(t, f.do(t, ctx, command("before", "tags", "count")), success, 0, "count|0")
	next, err := fleetserver.NewPKI(filepath.Join(t.TempDir(), "pki2"), "rotated")
	if err != nil {
		t.Fatal(err)
	}
	addr := f.srv.Addr()
	f.srv.Stop()
	put(next)
	srv2, err := fleetserver.Start(addr, fleetserver.Options{TLS: next.ServerTLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv2.Stop)
	f.srv = srv2
	if err := srv2.WaitSubscribed(ctx); err != nil {
		t.Fatalf("the agent did not connect with the new files: %v\n%s", err, a.stderr.String())
	}
	expectResult(t, f.do(t, ctx, command("after", "tags", "count")), success, 0, "count|0")
	a.stop(t)
}

// TestExpiredCertificate: with a client certificate that has expired, the agent says
// so at start, status names it as the reason it is disconnected, and it does not try
// faster than its backoff. A certificate that expires during a session is said in the
// log; the connection goes on until it breaks, and then status names the expiry.
func TestExpiredCertificate(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetserver.Options{}, tagsBin)
	cert, key, err := f.pki.IssueClient("expired", time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	run := func(cert, key string) *agentProc {
		return startAgentEnv(t, baseEnv(), "--plugin-dir", f.w.pluginDir, "--data-dir", f.w.dataDir, "run",
			"--server", f.srv.Addr(), "--ca-cert", f.pki.CA, "--client-cert", cert, "--client-key", key)
	}
	a := run(cert, key)
	time.Sleep(10 * time.Second)
	log := a.stderr.String()
	if !strings.Contains(log, "[WARN]  yuzu-agent: the client certificate expired at ") {
		t.Errorf("no warning at start:\n%s", log)
	}
	if n := strings.Count(log, "reconnecting to the fleet server"); n > 8 {
		t.Errorf("%d reconnect attempts in 10 s: faster than the backoff", n)
	}
	if len(f.srv.Registrations()) != 0 {
		t.Error("the server took a registration over an expired certificate")
	}
	st := runAgent(t, nil, "--data-dir", f.w.dataDir, "status")
	if st.code != 1 || !strings.Contains(st.stdout, ", disconnected: the client certificate expired at ") {
		t.Errorf("status with an expired certificate:\n%s", st)
	}
	a.stop(t)

	// One that expires 20 s into the session.
	cert, key, err = f.pki.IssueClient("short", time.Now().Add(-time.Minute), time.Now().Add(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	a = run(cert, key)
	ctx := testCtx(t, 2*time.Minute)
	if err := f.srv.WaitSubscribed(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the expiry in the log", func() bool {
		return strings.Contains(a.stderr.String(), "the client certificate has expired; this connection goes on")
	})
	f.srv.Stop()
	if err := f.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "a refused reconnect", func() bool {
		st := runAgent(t, nil, "--data-dir", f.w.dataDir, "status")
		return strings.Contains(st.stdout, ", disconnected: the client certificate expired at ")
	})
	a.stop(t)
}
