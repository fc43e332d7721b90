package certs_test

import (
	"crypto/tls"
	"testing"

	"github.com/ejserver/ejserver/internal/certs"
	"github.com/ejserver/ejserver/internal/testutil/testca"
)

// The check GetCertificate makes at every handshake (two stat calls, no parse when nothing changed), and a
// full TLS 1.3 handshake for scale.
func BenchmarkReloaderGetCertificate(b *testing.B) {
	ca := testca.New(b, "ca")
	certFile, keyFile := ca.Loopback(b, "srv").WriteFiles(b, b.TempDir(), "tls")
	r, err := certs.NewReloader(certFile, keyFile, nil)
	if err != nil {
		b.Fatal(err)
	}
	hello := &tls.ClientHelloInfo{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.GetCertificate(hello); err != nil {
			b.Fatal(err)
		}
	}
}
