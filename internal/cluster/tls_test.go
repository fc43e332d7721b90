package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/testutil/testca"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

func TestSessionOverTLSWithDigest(t *testing.T) {
	f := zktest.StartTLSFixture(t)
	zs, client := f.Server, f.Client
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ProbeTLS(ctx, []string{zs.Addr}, client); err != nil {
		t.Fatalf("probe with the right CA and certificate: %v", err)
	}
	s, err := Dial(ctx, SessionConfig{Servers: []string{zs.Addr}, SessionTimeout: 4 * time.Second, TLS: client,
		Digest: "ej:secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	path := "/" + zktest.Namespace("tls")
	if _, err := s.conn.Create(path, []byte("x"), 0, s.acl); err != nil {
		t.Fatal(err)
	}
	acl, _, err := s.conn.GetACL(path)
	if err != nil || len(acl) != 2 || acl[0].Scheme != "digest" {
		t.Fatalf("ACL %v, %v: want the digest ACL over TLS too", acl, err)
	}

	// a certificate the server's trust store does not hold: refused at the handshake
	other := testca.New(t, "other")
	stranger := other.Client(t, "stranger")
	pair, _ := tls.X509KeyPair(stranger.CertPEM, stranger.KeyPEM)
	bad := client.Clone()
	bad.Certificates = []tls.Certificate{pair}
	var te *TLSError
	if err := ProbeTLS(ctx, []string{zs.Addr}, bad); !errors.As(err, &te) {
		t.Fatalf("a client certificate of another CA: %v, want a TLSError", err)
	}
	// a CA that did not sign the server's certificate
	pool := x509.NewCertPool()
	pool.AddCert(other.Cert)
	wrongCA := client.Clone()
	wrongCA.RootCAs = pool
	var unknown x509.UnknownAuthorityError
	if err := ProbeTLS(ctx, []string{zs.Addr}, wrongCA); !errors.As(err, &unknown) {
		t.Fatalf("a wrong CA: %v, want x509.UnknownAuthorityError", err)
	}
	// nothing listens in plaintext: a plain client gets no session
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if plain, err := Dial(pctx, SessionConfig{Servers: []string{zs.Addr}, SessionTimeout: 2 * time.Second}); err == nil {
		plain.Close()
		t.Fatal("a plaintext client got a session from a TLS-only port")
	}
	var _ zk.Dialer = tlsDialer(client)
}
