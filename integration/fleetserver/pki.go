package fleetserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a throw-away certificate authority with a server and a client certificate,
// made fresh for each run and written as PEM files into Dir.
type PKI struct {
	Dir string
	// CA is the authority's certificate; ServerCert/ServerKey are for 127.0.0.1,
	// ::1 and localhost; ClientCert/ClientKey are the agent's.
	CA, ServerCert, ServerKey, ClientCert, ClientKey string

	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	pool   *x509.CertPool
	server tls.Certificate
}

// NewPKI makes an authority named name and its two certificates in dir.
func NewPKI(dir, name string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name + " test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if p.caCert, err = x509.ParseCertificate(caDER); err != nil {
		return nil, err
	}
	p.caKey = caKey
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.caCert)
	p.CA = filepath.Join(dir, "ca.pem")
	if err := writePEM(p.CA, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	// The authority's key, for an Issuer of a later run (LoadPKI).
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, err
	}
	if err := writePEM(filepath.Join(dir, "ca-key.pem"), "EC PRIVATE KEY", caKeyDER); err != nil {
		return nil, err
	}
	if p.ServerCert, p.ServerKey, err = p.issue("server", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return nil, err
	}
	if p.ClientCert, p.ClientKey, err = p.issue("client", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "yuzu-agent"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}
	if p.server, err = tls.LoadX509KeyPair(p.ServerCert, p.ServerKey); err != nil {
		return nil, err
	}
	return p, nil
}

// LoadPKI reads an authority NewPKI made in dir (perhaps in another process), with its
// key, so that a restarted server issues from the same authority.
func LoadPKI(dir string) (*PKI, error) {
	p := &PKI{Dir: dir, CA: filepath.Join(dir, "ca.pem"), ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem")}
	caPEM, err := os.ReadFile(p.CA)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(caPEM)
	if block == nil {
		return nil, fmt.Errorf("%s holds no certificate", p.CA)
	}
	if p.caCert, err = x509.ParseCertificate(block.Bytes); err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		return nil, err
	}
	if block, _ = pem.Decode(keyPEM); block == nil {
		return nil, fmt.Errorf("%s holds no key", filepath.Join(dir, "ca-key.pem"))
	}
	if p.caKey, err = x509.ParseECPrivateKey(block.Bytes); err != nil {
		return nil, err
	}
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.caCert)
	if p.server, err = tls.LoadX509KeyPair(p.ServerCert, p.ServerKey); err != nil {
		return nil, err
	}
	return p, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// IssueClient signs a client certificate valid from notBefore to notAfter and writes
// <name>.pem and <name>-key.pem in the PKI's directory: an expired or short-lived
// certificate for a test.
func (p *PKI) IssueClient(name string, notBefore, notAfter time.Time) (certPath, keyPath string, err error) {
	return p.issue(name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
	})
}

// issue signs a leaf from tmpl and writes <name>.pem and <name>-key.pem; a tmpl
// without a validity gets one from an hour ago to a day from now.
func (p *PKI) issue(name string, tmpl *x509.Certificate) (certPath, keyPath string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl.SerialNumber = serial()
	if tmpl.NotAfter.IsZero() {
		tmpl.NotBefore = time.Now().Add(-time.Hour)
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certPath = filepath.Join(p.Dir, name+".pem")
	keyPath = filepath.Join(p.Dir, name+"-key.pem")
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	return certPath, keyPath, writePEM(keyPath, "EC PRIVATE KEY", keyDER)
}

func writePEM(path, kind string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ServerTLS is the server side of mutual TLS: the server certificate, and a client
// certificate signed by this authority required from every agent.
func (p *PKI) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{p.server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.pool,
	}
}

// LoadServerTLS is ServerTLS for an authority made earlier (by NewPKI, perhaps in
// another process): the CA, the server certificate and its key, read from their PEM
// files.
func LoadServerTLS(ca, cert, key string) (*tls.Config, error) {
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no certificate", ca)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}, nil
}
