package fleetserver

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
)

// Approval is how an Issuer answers an enrollment.
type Approval string

const (
	// ApproveAuto issues a certificate at once.
	ApproveAuto Approval = "auto"
	// ApprovePending answers "pending" until Approve names the agent.
	ApprovePending Approval = "pending"
	// ApproveDeny refuses every enrollment.
	ApproveDeny Approval = "deny"
)

// Issuer signs the agents' CSRs with the PKI's authority: enrollment (a registration
// without a client certificate, with the enrollment token and a CSR) and renewal (a
// registration with a CSR from an agent that presents a certificate of this
// authority). It can revoke a serial: a connection presenting it is refused in the
// TLS handshake.
type Issuer struct {
	pki *PKI
	// Lifetime is how long an issued certificate is valid.
	Lifetime time.Duration

	mu       sync.Mutex
	mode     Approval
	approved map[string]bool   // agent ids Approve named
	pending  map[string]bool   // agent ids waiting for approval
	revoked  map[string]bool   // serials, hex
	issued   []Issued          // in order
	seen     map[string]string // serial (hex) -> agent id, of every certificate a registration or stream presented
}

// Issued is one certificate the Issuer signed.
type Issued struct {
	AgentID   string
	Serial    string // hex
	NotBefore time.Time
	NotAfter  time.Time
	Renewal   bool
	// CSR is the request it answered, PEM.
	CSR string
}

// NewIssuer returns an Issuer for p's authority, issuing certificates valid for
// lifetime, answering enrollments as mode says.
func (p *PKI) NewIssuer(lifetime time.Duration, mode Approval) *Issuer {
	return &Issuer{pki: p, Lifetime: lifetime, mode: mode, approved: map[string]bool{}, pending: map[string]bool{},
		revoked: map[string]bool{}, seen: map[string]string{}}
}

// SetMode changes how enrollments are answered from now on.
func (i *Issuer) SetMode(m Approval) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.mode = m
}

// Approve lets a pending agent's enrollment through at its next registration.
func (i *Issuer) Approve(agentID string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	was := i.pending[agentID]
	i.approved[agentID] = true
	return was
}

// Pending lists the agents waiting for approval.
func (i *Issuer) Pending() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	var out []string
	for id := range i.pending {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Revoke refuses a serial (hex) from now on.
func (i *Issuer) Revoke(serial string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.revoked[serial] = true
}

// Issued lists the certificates signed so far.
func (i *Issuer) Issued() []Issued {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]Issued(nil), i.issued...)
}

// Seen says whether a connection presented the certificate of this serial.
func (i *Issuer) Seen(serial string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	_, ok := i.seen[serial]
	return ok
}

// ServerTLS is the server side for enrolling agents: a client certificate of this
// authority is verified when one is given, not required (an agent enrolls without
// one), and a revoked one is refused in the handshake.
func (i *Issuer) ServerTLS() *tls.Config {
	cfg := i.pki.ServerTLS()
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	cfg.VerifyPeerCertificate = func(_ [][]byte, chains [][]*x509.Certificate) error {
		if len(chains) == 0 || len(chains[0]) == 0 {
			return nil
		}
		serial := fmt.Sprintf("%x", chains[0][0].SerialNumber)
		i.mu.Lock()
		defer i.mu.Unlock()
		if i.revoked[serial] {
			return fmt.Errorf("certificate %s is revoked", serial)
		}
		return nil
	}
	return cfg
}

// peerLeaf is the verified client certificate of the call, nil without one.
func peerLeaf(ctx context.Context) *x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return info.State.VerifiedChains[0][0]
}

// note records the certificate a call presented.
func (i *Issuer) note(ctx context.Context, agentID string) *x509.Certificate {
	leaf := peerLeaf(ctx)
	if leaf != nil {
		i.mu.Lock()
		i.seen[fmt.Sprintf("%x", leaf.SerialNumber)] = agentID
		i.mu.Unlock()
	}
	return leaf
}

// answer decides a registration: renewal, enrollment, or neither (resp nil: the
// server's other rules decide). tokenOK says the registration's token was right.
func (i *Issuer) answer(ctx context.Context, req *agentv1.RegisterRequest, tokenOK bool) *agentv1.RegisterResponse {
	agent := req.GetInfo().GetAgentId()
	leaf := i.note(ctx, agent)
	csr := req.GetCsrPem()
	switch {
	case leaf != nil && csr == "":
		return nil // an enrolled agent: accepted on its certificate
	case leaf != nil:
		cert, err := i.sign(agent, csr, true)
		if err != nil {
			return &agentv1.RegisterResponse{Accepted: false, RejectReason: err.Error(), EnrollmentStatus: "denied"}
		}
		return &agentv1.RegisterResponse{Accepted: true, EnrollmentStatus: "enrolled", IssuedCertificate: cert, IssuedCaChain: i.chain()}
	case csr == "":
		return &agentv1.RegisterResponse{Accepted: false, RejectReason: "no client certificate and no CSR: enroll with a CSR and the enrollment token", EnrollmentStatus: "denied"}
	case !tokenOK:
		return &agentv1.RegisterResponse{Accepted: false, RejectReason: "invalid enrollment token", EnrollmentStatus: "denied"}
	}
	i.mu.Lock()
	mode, approved := i.mode, i.approved[agent]
	if mode == ApprovePending && !approved {
		i.pending[agent] = true
	}
	i.mu.Unlock()
	switch {
	case mode == ApproveDeny:
		return &agentv1.RegisterResponse{Accepted: false, RejectReason: "enrollment denied by the fleet operator", EnrollmentStatus: "denied"}
	case mode == ApprovePending && !approved:
		return &agentv1.RegisterResponse{Accepted: false, RejectReason: "enrollment pending approval", EnrollmentStatus: "pending"}
	}
	cert, err := i.sign(agent, csr, false)
	if err != nil {
		return &agentv1.RegisterResponse{Accepted: false, RejectReason: err.Error(), EnrollmentStatus: "denied"}
	}
	i.mu.Lock()
	delete(i.pending, agent)
	i.mu.Unlock()
	return &agentv1.RegisterResponse{Accepted: true, EnrollmentStatus: "enrolled", IssuedCertificate: cert, IssuedCaChain: i.chain()}
}

// sign issues a client certificate for the CSR's key. The subject is the agent id the
// registration names (as a server sets it from the authenticated enrollment), not
// the CSR's.
func (i *Issuer) sign(agentID, csrPEM string, renewal bool) (string, error) {
	block, _ := pem.Decode([]byte(csrPEM))
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return "", errors.New("csr_pem holds no PEM certificate request")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("csr_pem: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return "", fmt.Errorf("csr_pem: %w", err)
	}
	sn, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      csr.Subject,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(i.Lifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	tmpl.Subject.CommonName = agentID
	der, err := x509.CreateCertificate(rand.Reader, tmpl, i.pki.caCert, csr.PublicKey, i.pki.caKey)
	if err != nil {
		return "", err
	}
	i.mu.Lock()
	i.issued = append(i.issued, Issued{AgentID: agentID, Serial: fmt.Sprintf("%x", sn), NotBefore: tmpl.NotBefore, NotAfter: tmpl.NotAfter, Renewal: renewal, CSR: csrPEM})
	i.mu.Unlock()
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}

// chain is the authority's certificate, PEM.
func (i *Issuer) chain() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: i.pki.caCert.Raw}))
}
