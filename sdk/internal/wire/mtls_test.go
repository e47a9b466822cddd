package wire

import (
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// handshake runs a TLS handshake between the two configurations over loopback TCP
// (buffered, so that a refusal's alert never blocks) and returns the client's and
// the server's errors.
func handshake(t *testing.T, client, server *tls.Config) (cerr, serr error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(time.Minute))
		done <- tls.Server(conn, server).Handshake()
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	c := tls.Client(conn, client)
	cerr = c.Handshake()
	if cerr == nil {
		// TLS 1.3: the server checks the client's certificate after the client's
		// handshake is done; a read sees its verdict.
		_, _ = c.Write([]byte("x"))
	}
	conn.Close()
	return cerr, <-done
}

// Each side accepts only the certificate the host made for the other.
func TestMutualTLSPins(t *testing.T) {
	host, hostPEM, _, err := NewCertificate()
	if err != nil {
		t.Fatal(err)
	}
	child, childPEM, childKey, err := NewCertificate()
	if err != nil {
		t.Fatal(err)
	}
	other, otherPEM, otherKey, err := NewCertificate()
	if err != nil {
		t.Fatal(err)
	}
	env := ServerEnv(childPEM, childKey)
	serverPEM := env[len(ServerTLSEnv)+1:]
	server, err := ServerTLS(serverPEM, string(hostPEM))
	if err != nil {
		t.Fatal(err)
	}
	if cerr, serr := handshake(t, ClientTLS(host, child.Leaf), server); cerr != nil || serr != nil {
		t.Fatalf("host and its child: client %v, server %v", cerr, serr)
	}
	// Another client certificate: the child refuses it.
	if _, serr := handshake(t, ClientTLS(other, child.Leaf), server); serr == nil {
		t.Error("the child accepted a client certificate the host did not send")
	}
	// Another server: the host refuses it.
	impostor, err := ServerTLS(string(otherPEM)+string(otherKey), string(hostPEM))
	if err != nil {
		t.Fatal(err)
	}
	if cerr, _ := handshake(t, ClientTLS(host, child.Leaf), impostor); cerr == nil {
		t.Error("the host accepted a server certificate it did not make")
	}
	if _, err := ServerTLS("junk", string(hostPEM)); err == nil {
		t.Error("ServerTLS took a variable without a key pair")
	}
	if _, err := ServerTLS(serverPEM, ""); err == nil {
		t.Error("ServerTLS took an empty client certificate")
	}
}
