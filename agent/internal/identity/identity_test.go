package identity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// testCA signs CSRs as a fleet server would.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCA{cert: c, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// sign issues a client certificate for the CSR's key, valid from nb to na.
func (ca *testCA) sign(t *testing.T, csrPEM string, nb, na time.Time) string {
	t.Helper()
	block, _ := pem.Decode([]byte(csrPEM))
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		t.Fatalf("not a CSR: %q", csrPEM)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || csr.CheckSignature() != nil {
		t.Fatalf("CSR: %v", err)
	}
	sn, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: sn, Subject: csr.Subject, NotBefore: nb, NotAfter: na,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, ca.cert, csr.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestEnrollInstallRenew: no identity, so the agent enrolls; the same CSR key is
// asked with again while pending; an issued leaf for another key, an expired one and
// garbage are refused; the right one is installed, private, presented by Config, and
// due for renewal between 0.567 and 0.667 of its life; a renewal rotates the key.
func TestEnrollInstallRenew(t *testing.T) {
	ca := newCA(t)
	base := t.TempDir()
	caFile := filepath.Join(base, "ca.pem")
	writeFile(t, caFile, ca.pem)
	dir := filepath.Join(base, "data", "certs")
	s := New(Files{CA: caFile}, dir)
	if !s.Enrolling() || s.Enrolled() {
		t.Fatal("a fresh agent must enroll")
	}
	cfg, err := s.Config()
	if err != nil || len(cfg.Certificates) != 0 || cfg.RootCAs == nil {
		t.Fatalf("fresh config: %v %v", cfg, err)
	}
	csr1, err := s.CSR("agent-1", false)
	if err != nil {
		t.Fatal(err)
	}
	// Pending: a new Source (a restarted agent) asks with the same key.
	again, err := New(Files{CA: caFile}, dir).CSR("agent-1", false)
	if err != nil {
		t.Fatal(err)
	}
	pub := func(csrPEM string) string {
		b, _ := pem.Decode([]byte(csrPEM))
		r, _ := x509.ParseCertificateRequest(b.Bytes)
		der, _ := x509.MarshalPKIXPublicKey(r.PublicKey)
		return string(der)
	}
	if pub(csr1) != pub(again) {
		t.Error("a pending enrollment asked with another key")
	}
	now := time.Now()
	other := New(Files{CA: caFile}, filepath.Join(base, "other"))
	otherCSR, _ := other.CSR("agent-2", false)
	for name, c := range map[string]struct{ leaf, want string }{
		"another key": {ca.sign(t, otherCSR, now, now.Add(time.Hour)), "not for the key"},
		"expired":     {ca.sign(t, csr1, now.Add(-2*time.Hour), now.Add(-time.Hour)), "expired"},
		"garbage":     {"-----BEGIN NOTHING-----\n", "no PEM certificate"},
	} {
		if _, err := s.Install(c.leaf, ca.pem); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if s.Enrolled() {
		t.Fatal("a refused certificate was installed")
	}
	leaf, err := s.Install(ca.sign(t, csr1, now.Add(-time.Minute), now.Add(59*time.Minute)), ca.pem)
	if err != nil {
		t.Fatal(err)
	}
	if s.Enrolling() || !s.Enrolled() {
		t.Error("installed, yet still enrolling")
	}
	if _, err := os.Stat(filepath.Join(dir, PendingKeyFile)); !os.IsNotExist(err) {
		t.Errorf("the pending key stayed: %v", err)
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(filepath.Join(dir, IdentityFile))
		di, _ := os.Stat(dir)
		if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
			t.Errorf("identity %v in %v, want 0600 in 0700", fi.Mode(), di.Mode())
		}
	}
	cfg, err = s.Config()
	if err != nil || len(cfg.Certificates) != 1 || cfg.Certificates[0].Leaf.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
		t.Fatalf("config after enrolling: %v", err)
	}
	cur, ok, err := s.Current()
	if err != nil || !ok || cur.Source != "enrolled" || cur.Problem(time.Now()) != "" {
		t.Errorf("current: %+v %v %v", cur, ok, err)
	}
	at, _, ok := s.RenewAt()
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	lo, hi := leaf.NotBefore.Add(life*2/3-life/10), leaf.NotBefore.Add(life*2/3)
	if !ok || at.Before(lo) || at.After(hi) {
		t.Errorf("renewal at %s, want between %s and %s", at, lo, hi)
	}
	if again, _, _ := s.RenewAt(); !again.Equal(at) {
		t.Error("the renewal time was drawn twice for one leaf")
	}
	csr2, err := s.CSR("agent-1", true)
	if err != nil || pub(csr2) == pub(csr1) {
		t.Fatalf("a renewal kept the key: %v", err)
	}
	if _, err := s.Install(ca.sign(t, csr2, now, now.Add(time.Hour)), ""); err != nil {
		t.Fatal(err)
	}
	cfg, _ = s.Config()
	if cfg.Certificates[0].Leaf.SerialNumber.Cmp(leaf.SerialNumber) == 0 {
		t.Error("the renewed certificate is not the one presented")
	}
}

// TestOperatorFilesReadEachTime: a client certificate and CA replaced on disk are what
// the next Config presents and trusts; the operator's files mean no enrollment.
func TestOperatorFilesReadEachTime(t *testing.T) {
	base := t.TempDir()
	files := Files{CA: filepath.Join(base, "ca.pem"), ClientCert: filepath.Join(base, "c.pem"), ClientKey: filepath.Join(base, "k.pem")}
	put := func(ca *testCA, na time.Time) string {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "a"}}, key)
		leaf := ca.sign(t, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), time.Now().Add(-time.Hour), na)
		kd, _ := x509.MarshalECPrivateKey(key)
		writeFile(t, files.CA, ca.pem)
		writeFile(t, files.ClientCert, leaf)
		writeFile(t, files.ClientKey, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})))
		return leaf
	}
	a, b := newCA(t), newCA(t)
	put(a, time.Now().Add(time.Hour))
	s := New(files, filepath.Join(base, "certs"))
	if s.Enrolling() || s.Enrolled() {
		t.Error("an operator's certificate, yet enrolling")
	}
	c1, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	put(b, time.Now().Add(24*time.Hour))
	c2, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	if c1.Certificates[0].Leaf.Issuer.String() == c2.Certificates[0].Leaf.Issuer.String() && string(c1.Certificates[0].Certificate[0]) == string(c2.Certificates[0].Certificate[0]) {
		t.Error("the replaced client certificate is still presented")
	}
	if c2.RootCAs.Equal(c1.RootCAs) {
		t.Error("the replaced CA is still trusted")
	}
	// An expired one is described as such.
	put(b, time.Now().Add(-time.Minute))
	cur, ok, err := s.Current()
	if err != nil || !ok || !cur.Bad(time.Now()) || !strings.Contains(cur.Problem(time.Now()), "expired at") {
		t.Errorf("expired: %+v %v", cur, err)
	}
	put(b, time.Now().Add(5*24*time.Hour))
	cur, _, _ = s.Current()
	if p := cur.Problem(time.Now()); cur.Bad(time.Now()) || !strings.Contains(p, "expires at") || !strings.Contains(p, "in 4 days") {
		t.Errorf("five days left: %q", p)
	}
	if err := (Files{}).Check(); err != ErrNoTrustAnchor {
		t.Errorf("no anchor: %v", err)
	}
	if err := (Files{SystemRoots: true, ClientKey: "k"}).Check(); err == nil {
		t.Error("a key without a certificate was accepted")
	}
}
