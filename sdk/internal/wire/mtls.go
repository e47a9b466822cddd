package wire

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// The mutual TLS between the agent and a plugin child (docs/agent.md "Mutual TLS").
// go-plugin's AutoMTLS makes a P-521 key and certificate on each side for every child; P-521 has no assembly in Go, and the two key generations, the
// signatures and their checks were a quarter of the CPU of a cold `exec`. The host
// makes both certificates instead, on P-256: its own once per run, the child's for
// each child, handed over in the child's environment.

// ServerTLSEnv is the variable holding the child's certificate and private key (PEM,
// certificate first; ServerEnv). The client's certificate travels in go-plugin's own
// PLUGIN_CLIENT_CERT, as with AutoMTLS. A child that does not find ServerTLSEnv (an
// older host) falls back to go-plugin's AutoMTLS, and a host given a certificate in
// the handshake line (an older plugin) trusts that one instead.
const ServerTLSEnv = "YUZU_PLUGIN_SERVER_TLS"

// ClientCertEnv is go-plugin's variable for the host's certificate (PEM).
const ClientCertEnv = "PLUGIN_CLIENT_CERT"

// TLSServerName is the name both certificates carry and the host checks.
const TLSServerName = "localhost"

// The certificates are pinned (each side trusts exactly the other's), so their
// validity period protects nothing; a wide one keeps a clock stepped back or forward
// while the agent runs from failing every later start.
var (
	certNotBefore = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	certNotAfter  = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC) // RFC 5280: no expiry
)

// NewCertificate makes a P-256 key and a self-signed certificate for TLSServerName,
// usable by either end. It returns the pair ready for crypto/tls (Leaf set), and the
// certificate and the key as PEM.
func NewCertificate() (cert tls.Certificate, certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: TLSServerName, Organization: []string{"yuzu plugin"}},
		DNSNames:              []string{TLSServerName},
		NotBefore:             certNotBefore,
		NotAfter:              certNotAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // it is its own root: each side pins the other's
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, certPEM, keyPEM, nil
}

// ServerEnv is the ServerTLSEnv variable for a child with this certificate and key.
func ServerEnv(certPEM, keyPEM []byte) string {
	return ServerTLSEnv + "=" + string(certPEM) + string(keyPEM)
}

// ServerTLS is the child's TLS configuration from what the host put in its
// environment: serverPEM (ServerTLSEnv) and clientPEM (ClientCertEnv). Only the
// host's certificate is accepted as a client.
func ServerTLS(serverPEM, clientPEM string) (*tls.Config, error) {
	cert, err := tls.X509KeyPair([]byte(serverPEM), []byte(serverPEM))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ServerTLSEnv, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(clientPEM)) {
		return nil, errors.New(ClientCertEnv + ": no certificate")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// ClientTLS is the host's TLS configuration for one child: it presents client and
// accepts only server as the child.
func ClientTLS(client tls.Certificate, server *x509.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(server)
	return &tls.Config{
		Certificates: []tls.Certificate{client},
		RootCAs:      pool,
		ServerName:   TLSServerName,
		MinVersion:   tls.VersionTLS13,
	}
}
