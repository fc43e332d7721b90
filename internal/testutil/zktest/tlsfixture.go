package zktest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"github.com/ejserver/ejserver/internal/testutil/testca"
)

// TLSFixture is a ZooKeeper that serves TLS only (no plaintext port) and needs client certificates, made for
// one test with a CA of its own, and the PEM files and config of a client it trusts.
type TLSFixture struct {
	Server                    *Server
	CAFile, CertFile, KeyFile string
	Client                    *tls.Config
}

// StartTLSFixture starts it; the server stops when the test ends.
func StartTLSFixture(t testing.TB) *TLSFixture {
	t.Helper()
	dir := t.TempDir()
	ca := testca.New(t, "zk-ca")
	srv := ca.Loopback(t, "zookeeper")
	keyStore := filepath.Join(dir, "keystore.pem") // ZooKeeper's PEM key store: its key, then its certificate
	if err := os.WriteFile(keyStore, append(append([]byte{}, srv.KeyPEM...), srv.CertPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &TLSFixture{CAFile: ca.WriteFile(t, dir, "zk-ca.pem")}
	cl := ca.Client(t, "ejserver")
	f.CertFile, f.KeyFile = cl.WriteFiles(t, dir, "zk-client")
	pair, err := tls.X509KeyPair(cl.CertPEM, cl.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	f.Client = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if f.Server, err = StartTLS(filepath.Join(dir, "zk"), TLSFiles{KeyStore: keyStore, TrustStore: f.CAFile}, f.Client); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Server.Stop)
	return f
}
