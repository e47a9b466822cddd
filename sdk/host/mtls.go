package host

import (
	"crypto/tls"
	"sync"

	"github.com/hashicorp/go-plugin"

	"github.com/yuzugo/yuzu/sdk/internal/wire"
)

// hostCert is the host's client certificate, made once per process: a child learns
// only its public half (docs/agent.md "Mutual TLS").
var hostCert = sync.OnceValues(func() (hostCertificate, error) {
	cert, certPEM, _, err := wire.NewCertificate()
	return hostCertificate{cert, certPEM}, err
})

type hostCertificate struct {
	tls tls.Certificate
	pem []byte
}

// MutualTLS sets cc up for the SDK's mutual TLS in place of go-plugin's AutoMTLS: a
// P-256 certificate for this child, made here, and the host's own, made once per
// process. It returns the variables the child's environment must hold; ClientConfig
// adds them to its Cmd, and a caller that starts the child itself (RunnerFunc) adds
// them to what it runs. The child's private key is in that environment, which only
// a process allowed to trace the child can read; such a process could read the key
// from the child's memory anyway.
func MutualTLS(cc *plugin.ClientConfig) ([]string, error) {
	client, err := hostCert()
	if err != nil {
		return nil, err
	}
	server, certPEM, keyPEM, err := wire.NewCertificate()
	if err != nil {
		return nil, err
	}
	cc.AutoMTLS = false
	cc.TLSConfig = wire.ClientTLS(client.tls, server.Leaf)
	return []string{wire.ClientCertEnv + "=" + string(client.pem), wire.ServerEnv(certPEM, keyPEM)}, nil
}
