// Package identity is what the agent trusts and presents on its TLS connection to the
// fleet server (docs/fleet.md "Identity: enrollment, renewal, rotation"): the
// certificate authorities and client certificate the operator's files name, read
// afresh for every connection, or else a client certificate the agent enrolled for
// itself: its own key pair, a CSR sent with the enrollment token, the leaf the server
// issued, renewed before two thirds of its lifetime have passed.
package identity

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// maxPEMBytes bounds the read of a certificate, key or identity file.
const maxPEMBytes = 1 << 20

// Files name what the operator configured: the authorities that may sign the
// server's certificate, and the agent's own certificate and key for mutual TLS.
type Files struct {
	// CA is a PEM file of the certificate authorities that may sign the server's
	// certificate.
	CA string
	// SystemRoots allows the system trust store when no CA file is given.
	SystemRoots bool
	// ClientCert and ClientKey are the agent's PEM certificate and key; both or
	// neither.
	ClientCert, ClientKey string
}

// ErrNoTrustAnchor means TLS was asked for without saying whom to trust.
var ErrNoTrustAnchor = errors.New("TLS needs a trust anchor: pass --ca-cert FILE, or --tls-system-roots to trust the system store (--no-tls only for a test server)")

// Check says whether the files can be used as they are now: what run refuses to start
// with. It reads them as Config does.
func (f Files) Check() error {
	if f.CA == "" && !f.SystemRoots {
		return ErrNoTrustAnchor
	}
	if (f.ClientCert == "") != (f.ClientKey == "") {
		return errors.New("--client-cert and --client-key go together: give both or neither")
	}
	_, err := (&Source{files: f}).Config()
	return err
}

// File names in the identity directory (<data-dir>/certs).
const (
	// IdentityFile holds the enrolled identity: the key, the issued leaf and the
	// chain the server sent, one file so that a renewal replaces all of it at once.
	IdentityFile = "identity.pem"
	// PendingKeyFile holds the key of a CSR the server has not answered with a
	// certificate yet: a pending enrollment is asked about with the same CSR.
	PendingKeyFile = "pending-key.pem"
)

// Source gives the TLS configuration of each connection and keeps the enrolled
// identity. It is safe for concurrent use.
type Source struct {
	files Files
	// dir is where an enrolled identity lives; "" disables enrollment.
	dir string
	now func() time.Time

	mu      sync.Mutex
	renewAt map[string]time.Time // by leaf serial: the jittered renewal time, drawn once
	pending *ecdsa.PrivateKey    // the key of the CSR last made, until Install
	jitter  func(max time.Duration) time.Duration
}

// New returns a Source for the operator's files and, when dir is not empty, an
// enrolled identity kept in dir.
func New(files Files, dir string) *Source {
	return &Source{files: files, dir: dir, now: time.Now, renewAt: map[string]time.Time{}, jitter: randomDuration}
}

// Files are the operator's files the Source reads.
func (s *Source) Files() Files { return s.files }

// Dir is where the enrolled identity lives ("" when enrollment is off).
func (s *Source) Dir() string { return s.dir }

// Operator reports whether the operator named a client certificate: the agent then
// never enrolls.
func (s *Source) Operator() bool { return s.files.ClientCert != "" }

// Config is the TLS configuration for the next connection, read afresh from the
// files: a file replaced on disk is used by the next connection, and no certificate
// the file has replaced stays in memory. The client certificate is the operator's
// when one is named, else the enrolled leaf when there is one, else none.
func (s *Source) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case s.files.CA != "":
		pemBytes, err := safefile.ReadFile(s.files.CA, maxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("--ca-cert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("--ca-cert: no PEM certificate in %s", s.files.CA)
		}
		cfg.RootCAs = pool
	case s.files.SystemRoots:
		// A nil RootCAs is the system store.
	default:
		return nil, ErrNoTrustAnchor
	}
	if (s.files.ClientCert == "") != (s.files.ClientKey == "") {
		return nil, errors.New("--client-cert and --client-key go together: give both or neither")
	}
	if s.files.ClientCert != "" {
		certPEM, err := safefile.ReadFile(s.files.ClientCert, maxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("--client-cert: %w", err)
		}
		keyPEM, err := safefile.ReadFile(s.files.ClientKey, maxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("--client-key: %w", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("--client-cert/--client-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
		return cfg, nil
	}
	id, err := s.enrolled()
	if err != nil {
		return nil, err
	}
	if id != nil {
		cfg.Certificates = []tls.Certificate{id.pair}
	}
	return cfg, nil
}

// enrolledID is the identity file read and checked.
type enrolledID struct {
	pair tls.Certificate
	leaf *x509.Certificate
}

// enrolled reads the identity file: nil when there is none (or enrollment is off).
// A file that cannot be used is an error naming it: the agent neither ignores nor
// overwrites what it cannot read (an operator can remove it to enroll afresh).
func (s *Source) enrolled() (*enrolledID, error) {
	if s.dir == "" {
		return nil, nil
	}
	path := filepath.Join(s.dir, IdentityFile)
	b, err := readPrivate(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the enrolled identity %s: %w", path, err)
	}
	pair, err := tls.X509KeyPair(b, b)
	if err != nil {
		return nil, fmt.Errorf("the enrolled identity %s: %w (remove it to enroll again)", path, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("the enrolled identity %s: %w", path, err)
	}
	pair.Leaf = leaf
	return &enrolledID{pair: pair, leaf: leaf}, nil
}

// readPrivate reads a file of the identity directory: a regular file (no link
// followed) only root or the agent's user can change, at most maxPEMBytes.
func readPrivate(path string) ([]byte, error) {
	return safefile.ReadTrusted(path, maxPEMBytes)
}

// Enrolling reports whether the next registration should carry a CSR: enrollment is
// on, the operator named no client certificate, and there is no enrolled leaf that is
// valid now (none, or one that expired: a new one is asked for).
func (s *Source) Enrolling() bool {
	if s.dir == "" || s.Operator() {
		return false
	}
	id, err := s.enrolled()
	if err != nil || id == nil {
		return err == nil
	}
	return s.now().After(id.leaf.NotAfter)
}

// Enrolled reports whether the agent holds a leaf it enrolled for.
func (s *Source) Enrolled() bool {
	if s.dir == "" || s.Operator() {
		return false
	}
	id, err := s.enrolled()
	return err == nil && id != nil
}

// CSR returns a PEM PKCS#10 request for the pending key, made (P-256) and kept in
// PendingKeyFile when there is none, so that asking again (a pending enrollment)
// asks for the same key. renew makes a new key even when one is pending: a renewal
// rotates the key. The subject's common name is the agent id; the server sets the
// identity from the authenticated enrollment, not from it.
func (s *Source) CSR(agentID string, renew bool) (string, error) {
	if s.dir == "" {
		return "", errors.New("enrollment is off")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ensureDir(s.dir); err != nil {
		return "", err
	}
	keyPath := filepath.Join(s.dir, PendingKeyFile)
	var key *ecdsa.PrivateKey
	if !renew {
		if b, err := readPrivate(keyPath); err == nil {
			key, _ = parseKey(b)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("the pending key %s: %w", keyPath, err)
		}
	}
	if key == nil {
		var err error
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return "", err
		}
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return "", err
		}
		if err := writePrivate(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})); err != nil {
			return "", fmt.Errorf("the pending key %s: %w", keyPath, err)
		}
	}
	s.pending = key
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:            pkix.Name{CommonName: agentID},
		SignatureAlgorithm: x509.ECDSAWithSHA256,
	}, key)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), nil
}

func parseKey(b []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM key")
	}
	return x509.ParseECPrivateKey(block.Bytes)
}

// Install takes the leaf and chain the server issued for the last CSR: the leaf must
// parse, be for the pending key, be a client certificate, and not have expired. The
// key, the leaf and the chain are written as IdentityFile in one atomic replacement,
// and the pending key goes. It returns the leaf.
func (s *Source) Install(leafPEM, chainPEM string) (*x509.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.pending
	if key == nil {
		b, err := readPrivate(filepath.Join(s.dir, PendingKeyFile))
		if err != nil {
			return nil, fmt.Errorf("an issued certificate but no pending key: %w", err)
		}
		if key, err = parseKey(b); err != nil {
			return nil, err
		}
	}
	leaf, rest, err := firstCertificate([]byte(leafPEM))
	if err != nil {
		return nil, fmt.Errorf("the issued certificate: %w", err)
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New("the issued certificate is not for the key the agent asked with")
	}
	if len(leaf.ExtKeyUsage) > 0 && !hasUsage(leaf, x509.ExtKeyUsageClientAuth) {
		return nil, errors.New("the issued certificate is not for client authentication")
	}
	if s.now().After(leaf.NotAfter) {
		return nil, fmt.Errorf("the issued certificate expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	var chain bytes.Buffer
	for _, b := range [][]byte{rest, []byte(chainPEM)} {
		for {
			var block *pem.Block
			block, b = pem.Decode(b)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				continue
			}
			if _, err := x509.ParseCertificate(block.Bytes); err != nil {
				return nil, fmt.Errorf("the issued chain: %w", err)
			}
			_ = pem.Encode(&chain, block)
		}
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	_ = pem.Encode(&out, &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})
	out.Write(chain.Bytes())
	if err := ensureDir(s.dir); err != nil {
		return nil, err
	}
	if err := writePrivate(filepath.Join(s.dir, IdentityFile), out.Bytes()); err != nil {
		return nil, err
	}
	_ = os.Remove(filepath.Join(s.dir, PendingKeyFile))
	s.pending = nil
	return leaf, nil
}

func hasUsage(c *x509.Certificate, u x509.ExtKeyUsage) bool {
	for _, x := range c.ExtKeyUsage {
		if x == u || x == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}

// firstCertificate parses the first CERTIFICATE block of b and returns what follows.
func firstCertificate(b []byte) (*x509.Certificate, []byte, error) {
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return nil, nil, errors.New("no PEM certificate")
		}
		if block.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(block.Bytes)
			return c, b, err
		}
	}
}

// Exposed says who besides the trusted accounts can read the enrolled identity (its
// key), nil when no one can or there is none.
func (s *Source) Exposed() error {
	if s.dir == "" {
		return nil
	}
	f, fi, err := safefile.Open(filepath.Join(s.dir, IdentityFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	return safefile.Private(f, fi)
}

// Leaf describes a client certificate: the operator's or the enrolled one.
type Leaf struct {
	// Source is "file" (the operator's --client-cert) or "enrolled".
	Source    string
	Subject   string
	Issuer    string
	Serial    string // hex
	NotBefore time.Time
	NotAfter  time.Time
}

// ExpiryWarning is how long before its end a certificate is warned about.
const ExpiryWarning = 14 * 24 * time.Hour

// Problem says what is wrong with the leaf at now: expired, not yet valid, or close
// to its end: from ExpiryWarning before it, or, for an enrolled leaf, which the agent
// renews at two thirds of its life, once less than a quarter of it is left (a renewal
// is late: short-lived certificates are normal, and not worth a warning each); ""
// when nothing is.
func (l Leaf) Problem(now time.Time) string {
	warn := ExpiryWarning
	if l.Source == "enrolled" {
		warn = min(warn, l.NotAfter.Sub(l.NotBefore)/4)
	}
	switch {
	case now.After(l.NotAfter):
		return fmt.Sprintf("the client certificate expired at %s", l.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(l.NotBefore):
		return fmt.Sprintf("the client certificate is not valid before %s (check the clock)", l.NotBefore.UTC().Format(time.RFC3339))
	case l.NotAfter.Sub(now) < warn:
		return fmt.Sprintf("the client certificate expires at %s, in %s", l.NotAfter.UTC().Format(time.RFC3339), DaysLeft(l.NotAfter.Sub(now)))
	}
	return ""
}

// Bad reports whether a Problem keeps the certificate from being accepted now.
func (l Leaf) Bad(now time.Time) bool { return now.After(l.NotAfter) || now.Before(l.NotBefore) }

// DaysLeft words a remaining time: "3 days", "1 day", "5 h" under a day.
func DaysLeft(d time.Duration) string {
	switch days := int(d.Hours() / 24); {
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	case days == 1:
		return "1 day"
	default:
		return fmt.Sprintf("%d days", days)
	}
}

// LeafOf describes a certificate; source is "file" or "enrolled".
func LeafOf(c *x509.Certificate, source string) Leaf {
	return Leaf{Source: source, Subject: c.Subject.String(), Issuer: c.Issuer.String(), Serial: fmt.Sprintf("%x", c.SerialNumber),
		NotBefore: c.NotBefore, NotAfter: c.NotAfter}
}

// Current describes the client certificate the next connection presents; ok is false
// when there is none.
func (s *Source) Current() (leaf Leaf, ok bool, err error) {
	if s.files.ClientCert != "" {
		b, err := safefile.ReadFile(s.files.ClientCert, maxPEMBytes)
		if err != nil {
			return Leaf{}, false, fmt.Errorf("--client-cert: %w", err)
		}
		c, _, err := firstCertificate(b)
		if err != nil {
			return Leaf{}, false, fmt.Errorf("--client-cert %s: %w", s.files.ClientCert, err)
		}
		return LeafOf(c, "file"), true, nil
	}
	id, err := s.enrolled()
	if err != nil || id == nil {
		return Leaf{}, false, err
	}
	return LeafOf(id.leaf, "enrolled"), true, nil
}

// RenewAt is when the enrolled leaf should be renewed: two thirds into its lifetime,
// less a random part of up to a tenth of it (drawn once per leaf), so that agents
// enrolled together do not all ask at once. ok is false without an enrolled leaf.
func (s *Source) RenewAt() (at time.Time, leaf Leaf, ok bool) {
	if s.Operator() {
		return time.Time{}, Leaf{}, false
	}
	id, err := s.enrolled()
	if err != nil || id == nil {
		return time.Time{}, Leaf{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := id.leaf.SerialNumber.String()
	at, seen := s.renewAt[key]
	if !seen {
		life := id.leaf.NotAfter.Sub(id.leaf.NotBefore)
		at = id.leaf.NotBefore.Add(life*2/3 - s.jitter(life/10))
		s.renewAt[key] = at
	}
	return at, LeafOf(id.leaf, "enrolled"), true
}

// randomDuration is uniform in [0, max).
func randomDuration(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(max)))
	if err != nil {
		return 0
	}
	return time.Duration(n.Int64())
}

// Describe words a leaf for logs and status: subject, issuer, serial, not-after and
// the time left.
func Describe(l Leaf, now time.Time) string {
	left := "expired"
	if now.Before(l.NotAfter) {
		left = DaysLeft(l.NotAfter.Sub(now)) + " left"
	}
	return fmt.Sprintf("%s certificate %s, issued by %s, serial %s, valid until %s (%s)",
		l.Source, l.Subject, l.Issuer, shortSerial(l.Serial), l.NotAfter.UTC().Format(time.RFC3339), left)
}

func shortSerial(s string) string {
	if len(s) > 16 {
		return s[:16] + "..."
	}
	return strings.ToLower(s)
}
