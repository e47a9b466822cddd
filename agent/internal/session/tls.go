package session

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// maxPEMBytes bounds the read of a certificate or key file.
const maxPEMBytes = 1 << 20

// TLSFiles name what the agent's TLS connection to the fleet server trusts and
// presents.
type TLSFiles struct {
	// CA is a PEM file of the certificate authorities that may sign the server's
	// certificate.
	CA string
	// SystemRoots allows the system trust store when no CA file is given.
	SystemRoots bool
	// ClientCert and ClientKey are the agent's own PEM certificate and key, for
	// mutual TLS; both or neither.
	ClientCert, ClientKey string
}

// ErrNoTrustAnchor means TLS was asked for without saying whom to trust.
var ErrNoTrustAnchor = errors.New("TLS needs a trust anchor: pass --ca-cert FILE, or --tls-system-roots to trust the system store (--no-tls only for a test server)")

// ClientTLS builds the TLS configuration of the connection to the fleet server. It
// fails closed: without a CA file and without SystemRoots there is no configuration.
// The files are read as files someone else may have planted: no link, no FIFO, at most
// 1 MiB.
func ClientTLS(f TLSFiles) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case f.CA != "":
		pem, err := safefile.ReadFile(f.CA, maxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("--ca-cert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-cert: no PEM certificate in %s", f.CA)
		}
		cfg.RootCAs = pool
	case f.SystemRoots:
		// A nil RootCAs is the system store.
	default:
		return nil, ErrNoTrustAnchor
	}
	if (f.ClientCert == "") != (f.ClientKey == "") {
		return nil, errors.New("--client-cert and --client-key go together: give both or neither")
	}
	if f.ClientCert != "" {
		certPEM, err := safefile.ReadFile(f.ClientCert, maxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("--client-cert: %w", err)
		}
		keyPEM, err := safefile.ReadFile(f.ClientKey, maxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("--client-key: %w", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("--client-cert/--client-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
