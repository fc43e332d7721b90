package webhook

import (
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil/testca"
)

// What a delivery with webhook.tls adds to Prepare once its transport is cached: the settings' fingerprint
// and a map lookup.
func BenchmarkTLSClientsGetCached(b *testing.B) {
	ca := testca.New(b, "ca")
	p := ca.Client(b, "c")
	s := New(Config{})
	defer s.Close()
	t := &ejserver.WebhookTLS{CAPem: string(ca.CertPEM), ClientCertPem: string(p.CertPEM), ClientKeyPem: string(p.KeyPEM)}
	if _, err := s.tls.get(t); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.tls.get(t); err != nil {
			b.Fatal(err)
		}
	}
}
