package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/ejserver/ejserver/internal/certs"
	"github.com/ejserver/ejserver/internal/testutil/testca"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCertName(t *testing.T) {
	u, _ := url.Parse("spiffe://cluster/ns/payments/sa/deployer")
	tests := []struct {
		name string
		cert *x509.Certificate
		want string
	}{
		{"nil", nil, ""},
		{"dns first", &x509.Certificate{DNSNames: []string{"deployer.example", "b"}, Subject: pkix.Name{CommonName: "cn"},
			URIs: []*url.URL{u}}, "deployer.example"},
		{"cn without dns", &x509.Certificate{Subject: pkix.Name{CommonName: "ci-bot"}, URIs: []*url.URL{u}}, "ci-bot"},
		{"uri last", &x509.Certificate{URIs: []*url.URL{u}}, "spiffe://cluster/ns/payments/sa/deployer"},
		{"nothing", &x509.Certificate{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := certs.CertName(tt.cert); got != tt.want {
				t.Fatalf("CertName = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePool(t *testing.T) {
	ca := testca.New(t, "ca")
	other := testca.New(t, "other")
	pair := ca.Client(t, "x")
	tests := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{"one", ca.CertPEM, ""},
		{"bundle", append(append([]byte{}, ca.CertPEM...), other.CertPEM...), ""},
		{"empty", nil, "no PEM certificate"},
		{"garbage", []byte("not pem"), "no PEM certificate"},
		{"a key", pair.KeyPEM, "PRIVATE KEY block"},
		{"corrupt", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "certificate 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := certs.ParsePool(tt.in)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("ParsePool err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzParsePool(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pool, err := certs.ParsePool(b)
		if (pool == nil) == (err == nil) {
			t.Fatalf("pool %v with err %v", pool, err)
		}
	})
}

func TestParseKeyPair(t *testing.T) {
	ca := testca.New(t, "ca")
	a, b := ca.Client(t, "a"), ca.Client(t, "b")
	if _, err := certs.ParseKeyPair(a.CertPEM, a.KeyPEM); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		cert, key []byte
		wantErr   string
	}{
		{"key of another certificate", a.CertPEM, b.KeyPEM, "the key does not match the certificate"},
		{"cert not pem", []byte("x"), a.KeyPEM, "the certificate is not PEM"},
		{"key not pem", a.CertPEM, []byte("x"), "the key is not PEM"},
		{"swapped", a.KeyPEM, a.CertPEM, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := certs.ParseKeyPair(tt.cert, tt.key)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") && tt.wantErr != "" {
				t.Fatalf("the error quotes the key: %v", err)
			}
		})
	}
}

func TestClientConfigNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	ca := testca.New(t, "ca")
	caFile := ca.WriteFile(t, dir, "ca.pem")
	certFile, keyFile := ca.Client(t, "c").WriteFiles(t, dir, "client")
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		files certs.ClientFiles
		which string
	}{
		{"ok", certs.ClientFiles{CA: caFile, Cert: certFile, Key: keyFile}, ""},
		{"ca only", certs.ClientFiles{CA: caFile}, ""},
		{"missing ca", certs.ClientFiles{CA: filepath.Join(dir, "none")}, "ca"},
		{"bad ca", certs.ClientFiles{CA: bad}, "ca"},
		{"cert without key", certs.ClientFiles{Cert: certFile}, "key"},
		{"key without cert", certs.ClientFiles{Key: keyFile}, "cert"},
		{"key is not the cert's", certs.ClientFiles{Cert: certFile, Key: bad}, "cert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := certs.ClientConfig(tt.files)
			var fe *certs.FileError
			switch {
			case tt.which == "" && err != nil:
				t.Fatal(err)
			case tt.which == "" && cfg.MinVersion != tls.VersionTLS12:
				t.Fatalf("MinVersion %x", cfg.MinVersion)
			case tt.which != "" && (!errors.As(err, &fe) || fe.Which != tt.which):
				t.Fatalf("err = %v, want a FileError for %s", err, tt.which)
			}
		})
	}
}

// serveTLS accepts handshakes on loopback until the test ends.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func leafOf(t *testing.T, addr string, cfg *tls.Config) *x509.Certificate {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{}, "tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0]
}

// reloadingServer serves a loopback certificate named cn from files in dir through a Reloader, and returns
// the files, the Reloader, the address and a client config that trusts the CA.
type reloadingServer struct {
	ca                *testca.CA
	certFile, keyFile string
	r                 *certs.Reloader
	addr              string
	client            *tls.Config
}

func newReloadingServer(t *testing.T, dir, cn string) reloadingServer {
	t.Helper()
	s := reloadingServer{ca: testca.New(t, "ca")}
	s.certFile, s.keyFile = s.ca.Loopback(t, cn).WriteFiles(t, dir, "tls")
	var err error
	if s.r, err = certs.NewReloader(s.certFile, s.keyFile, nil); err != nil {
		t.Fatal(err)
	}
	s.addr = serveTLS(t, certs.ServerConfig(s.r.GetCertificate, nil))
	pool := x509.NewCertPool()
	pool.AddCert(s.ca.Cert)
	s.client = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return s
}

func TestReloaderServesTheRotatedCertificateAtTheNextHandshake(t *testing.T) {
	dir := t.TempDir()
	srv := newReloadingServer(t, dir, "first")
	ca, certFile, keyFile, r, addr, client := srv.ca, srv.certFile, srv.keyFile, srv.r, srv.addr, srv.client
	if cn := leafOf(t, addr, client).Subject.CommonName; cn != "first" {
		t.Fatalf("served %q", cn)
	}
	// half a rotation: the new certificate is there, its key not yet: the old pair is kept
	second := ca.Loopback(t, "second")
	if err := os.WriteFile(certFile, second.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if cn := leafOf(t, addr, client).Subject.CommonName; cn != "first" {
		t.Fatalf("served %q during a half rotation", cn)
	}
	// as cert-manager's Secret volume does it: new files, renamed into place
	tmp := filepath.Join(dir, "new.key")
	if err := os.WriteFile(tmp, second.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, keyFile); err != nil {
		t.Fatal(err)
	}
	if cn := leafOf(t, addr, client).Subject.CommonName; cn != "second" {
		t.Fatalf("served %q after the rotation", cn)
	}
	if r.Reloads() != 1 {
		t.Fatalf("reloads = %d", r.Reloads())
	}
}

func TestServerRefusesTLS11(t *testing.T) {
	srv := newReloadingServer(t, t.TempDir(), "srv")
	old := srv.client.Clone()
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	_, err := tls.Dial("tcp", srv.addr, old)
	if err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("a TLS 1.1 handshake: err = %v, want a protocol version refusal", err)
	}
}

func TestNewReloaderErrors(t *testing.T) {
	dir := t.TempDir()
	ca := testca.New(t, "ca")
	certFile, keyFile := ca.Loopback(t, "a").WriteFiles(t, dir, "a")
	_, otherKey := ca.Loopback(t, "b").WriteFiles(t, dir, "b")
	var fe *certs.FileError
	if _, err := certs.NewReloader(filepath.Join(dir, "none"), keyFile, nil); !errors.As(err, &fe) || fe.Which != "cert" {
		t.Fatalf("missing cert: %v", err)
	}
	if _, err := certs.NewReloader(certFile, filepath.Join(dir, "none"), nil); !errors.As(err, &fe) || fe.Which != "key" {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := certs.NewReloader(certFile, otherKey, nil); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("mismatched key: %v", err)
	}
}

func TestVerifiedClientName(t *testing.T) {
	ca := testca.New(t, "ca")
	p := ca.Issue(t, testca.Names{CommonName: "ci-bot", Client: true})
	if got := certs.VerifiedClientName(nil); got != "" {
		t.Fatal(got)
	}
	if got := certs.VerifiedClientName(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{p.Cert}}); got != "" {
		t.Fatalf("an unverified certificate named %q", got)
	}
	st := &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{p.Cert, ca.Cert}}}
	if got := certs.VerifiedClientName(st); got != "ci-bot" {
		t.Fatalf("got %q", got)
	}
}
