package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/internal/identity"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// Enrollment and renewal (docs/fleet.md "Identity: enrollment, renewal, rotation").
// Without a client certificate of the operator's, the agent enrolls: its registration
// carries a CSR for a key of its own with the enrollment token, and the certificate
// the server issues is kept beside that key (identity.Source). "pending" is asked
// again with the same CSR after the backoff; "denied" stops the agent; an issued
// certificate makes the agent connect again at once, presenting it. Before two thirds
// of its lifetime have passed, the agent sends a CSR for a new key over its live
// connection, installs the certificate once it is issued, and reconnects with it.

var (
	// errPending: the server has not decided on the enrollment yet.
	errPending = errors.New("enrollment pending approval")
	// errEnrolled: a certificate was issued; the next connection presents it.
	errEnrolled = errors.New("enrolled: reconnecting with the issued certificate")
	// errRenewed: the certificate was renewed; the next connection presents it.
	errRenewed = errors.New("certificate renewed: reconnecting with it")
)

// Renewal retries: a refused or failed renewal is asked again after a backoff
// (full jitter, as reconnects), while the current certificate serves.
const (
	renewBackoffBase = 5 * time.Second
	renewBackoffMax  = time.Hour
)

// EnrollState is what the agent knows of its enrollment and renewals, for status.
type EnrollState struct {
	// Status is "" (not enrolling), "pending", "enrolled" or "denied".
	Status string
	Reason string    // the server's words, shortened
	Since  time.Time // when Status last changed
	// RenewError is the last renewal's failure, at RenewFailedAt; cleared by a
	// renewal that succeeds.
	RenewError    string
	RenewFailedAt time.Time
	Renewals      int
}

// Enrollment returns the enrollment state.
func (s *Session) Enrollment() EnrollState {
	s.enrollMu.Lock()
	defer s.enrollMu.Unlock()
	return s.enroll
}

func (s *Session) setEnroll(f func(*EnrollState)) {
	s.enrollMu.Lock()
	defer s.enrollMu.Unlock()
	f(&s.enroll)
}

// enrolled installs the certificate an accepted enrollment carries. Without one the
// agent goes on without a client certificate and asks again at its next connection.
func (s *Session) enrolled(resp *agentv1.RegisterResponse) error {
	if resp.GetIssuedCertificate() == "" {
		s.log.Warn("the fleet server accepted the registration but issued no certificate; the agent goes on without one and asks again at its next connection")
		return nil
	}
	leaf, err := s.o.Identity.Install(resp.GetIssuedCertificate(), resp.GetIssuedCaChain())
	if err != nil {
		return fmt.Errorf("enrollment: %w", err)
	}
	s.setEnroll(func(e *EnrollState) { e.Status, e.Reason, e.Since = "enrolled", "", time.Now() })
	s.o.Metrics.Certificate(leaf.NotAfter)
	s.log.Info("enrolled: the fleet server issued a certificate; connecting again with it",
		"certificate", rows.Printable(identity.Describe(identity.LeafOf(leaf, "enrolled"), time.Now())))
	if s.o.EnrollmentToken != "" {
		s.log.Info("the enrollment token is not sent again: the certificate is the agent's identity now (the token can be removed from the configuration)")
	}
	return nil
}

// renew waits until the enrolled certificate is due for renewal and renews it over
// client, the live connection; renewed is closed once a new certificate is installed.
// A failure is logged and retried after a backoff while the current certificate
// serves. It returns when ctx ends, at once when there is nothing to renew.
func (s *Session) renew(ctx context.Context, client agentv1.AgentServiceClient, renewed chan<- struct{}) {
	if s.o.Identity == nil {
		return
	}
	failures := 0
	for {
		at, leaf, ok := s.o.Identity.RenewAt()
		if !ok {
			return
		}
		wait := time.Until(at)
		if failures > 0 {
			wait = max(wait, backoff(failures, renewBackoffBase, renewBackoffMax, s.o.Rand))
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		err := s.renewOnce(ctx, client)
		if err == nil {
			close(renewed)
			return
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		s.o.Metrics.Renewal(false)
		s.setEnroll(func(e *EnrollState) { e.RenewError, e.RenewFailedAt = rows.Printable(err.Error()), time.Now() })
		s.log.Warn("certificate renewal failed; the current certificate serves until it expires",
			"error", rows.Printable(err.Error()), "expires", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
}

// renewOnce asks for a certificate for a new key and installs it.
func (s *Session) renewOnce(ctx context.Context, client agentv1.AgentServiceClient) error {
	csr, err := s.o.Identity.CSR(s.o.AgentID, true)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	resp, err := client.Register(rctx, &agentv1.RegisterRequest{Info: s.agentInfo(rctx), CsrPem: csr})
	if err != nil {
		return fmt.Errorf("register: %w", err)
	}
	if !resp.GetAccepted() || resp.GetIssuedCertificate() == "" {
		return fmt.Errorf("the server issued no certificate (status %q: %s)", resp.GetEnrollmentStatus(), shownReason(resp.GetRejectReason()))
	}
	leaf, err := s.o.Identity.Install(resp.GetIssuedCertificate(), resp.GetIssuedCaChain())
	if err != nil {
		return err
	}
	s.setEnroll(func(e *EnrollState) { e.RenewError, e.RenewFailedAt = "", time.Time{}; e.Renewals++ })
	s.o.Metrics.Renewal(true)
	s.o.Metrics.Certificate(leaf.NotAfter)
	s.log.Info("certificate renewed; connecting again with it",
		"certificate", rows.Printable(identity.Describe(identity.LeafOf(leaf, "enrolled"), time.Now())))
	return nil
}

// watchExpiry says in the log, while a connection lasts, when the certificate it
// presented comes close to its end and when it ends: the live connection goes on, but
// the next one will be refused. A certificate that expired unnoticed (a file nobody
// renewed) then shows only as reconnects that fail.
func (s *Session) watchExpiry(ctx context.Context) {
	if s.o.Identity == nil {
		return
	}
	leaf, ok, err := s.o.Identity.Current()
	if err != nil || !ok {
		return
	}
	warned := leaf.Problem(time.Now()) != "" // said at start or at connect already
	for {
		now := time.Now()
		var next time.Time
		switch {
		case now.After(leaf.NotAfter):
			s.log.Warn("the client certificate has expired; this connection goes on, the next one will be refused until a valid certificate is in place",
				"certificate", rows.Printable(identity.Describe(leaf, now)))
			return
		case !warned && leaf.Problem(now) != "":
			s.log.Warn(leaf.Problem(now), "certificate", rows.Printable(identity.Describe(leaf, now)))
			warned = true
			continue
		case !warned:
			// The first moment Problem speaks: try again a little before it.
			next = now.Add(min(leaf.NotAfter.Sub(now)/8, time.Hour))
		default:
			next = leaf.NotAfter.Add(time.Second)
		}
		t := time.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
