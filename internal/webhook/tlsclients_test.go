package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil/testca"
)

// mtlsReceiver is an HTTPS receiver whose certificate is signed by serverCA and that demands a client
// certificate signed by clientCA; it counts the requests that got through and keeps the last signature.
type mtlsReceiver struct {
	*httptest.Server
	got     atomic.Int64
	lastSig atomic.Value
	lastCN  atomic.Value
}

func newMTLSReceiver(t *testing.T, serverCA, clientCA *testca.CA) *mtlsReceiver {
	t.Helper()
	r := &mtlsReceiver{}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.got.Add(1)
		r.lastSig.Store(req.Header.Get(HeaderSignature))
		r.lastCN.Store(req.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	pair := serverCA.Issue(t, testca.Names{CommonName: "receiver", DNS: []string{"receiver.internal"}})
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.Cert)
	r.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
		MinVersion: tls.VersionTLS12}
	r.StartTLS()
	t.Cleanup(r.Close)
	return r
}

// A receiver that demands client certificates gets signed webhooks from a job with the right webhook.tls; with
// the wrong certificate, or none, or a CA that did not sign the receiver, the failure says why.
func TestWebhookTLSMutual(t *testing.T) {
	serverCA, clientCA := testca.New(t, "receiver-ca"), testca.New(t, "client-ca")
	recv := newMTLSReceiver(t, serverCA, clientCA)
	good := clientCA.Client(t, "ejserver-peer")
	rogue := testca.New(t, "rogue").Client(t, "ejserver-peer")
	secret := GenerateSecret()

	tests := []struct {
		name      string
		tls       *ejserver.WebhookTLS
		wantOK    bool
		wantCause string
	}{
		{"the right client certificate", &ejserver.WebhookTLS{CAPem: string(serverCA.CertPEM), ServerName: "receiver.internal",
			ClientCertPem: string(good.CertPEM), ClientKeyPem: string(good.KeyPEM)}, true, ""},
		{"a client certificate of another CA", &ejserver.WebhookTLS{CAPem: string(serverCA.CertPEM), ServerName: "receiver.internal",
			ClientCertPem: string(rogue.CertPEM), ClientKeyPem: string(rogue.KeyPEM)}, false, "certificate"},
		{"no client certificate", &ejserver.WebhookTLS{CAPem: string(serverCA.CertPEM), ServerName: "receiver.internal"}, false, "certificate"},
		{"no webhook.tls: the receiver is not verified", nil, false, "failed to verify certificate"},
		{"the wrong server name", &ejserver.WebhookTLS{CAPem: string(serverCA.CertPEM), ServerName: "other.internal",
			ClientCertPem: string(good.CertPEM), ClientKeyPem: string(good.KeyPEM)}, false, "other.internal"},
	}
	s, _ := newTestSender(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := recv.got.Load()
			d := testDelivery(recv.URL + "/hook")
			d.Retry.MaxAttempts = 1
			d.Webhook.Secret = secret
			d.Webhook.TLS = tt.tls
			res := s.Deliver(context.Background(), d)
			if res.Success != tt.wantOK {
				t.Fatalf("result %+v, want success %v", res, tt.wantOK)
			}
			if tt.wantOK {
				if recv.got.Load() != before+1 || !strings.HasPrefix(recv.lastSig.Load().(string), "v1,") || recv.lastCN.Load() != "ejserver-peer" {
					t.Fatalf("the receiver got %d requests, signature %q, client %q", recv.got.Load()-before, recv.lastSig.Load(), recv.lastCN.Load())
				}
				return
			}
			if !strings.Contains(res.FailureCause, tt.wantCause) || strings.Contains(res.FailureCause, "PRIVATE") {
				t.Fatalf("cause %q, want it to say %q", res.FailureCause, tt.wantCause)
			}
			if recv.got.Load() != before {
				t.Fatal("the request reached the receiver's handler")
			}
		})
	}
}

// Deliveries with the same settings share one transport; distinct settings each get one, at most
// MaxTLSClients kept; a setting that does not parse fails the delivery for good, without quoting the PEMs.
func TestWebhookTLSClientsAreCachedAndBounded(t *testing.T) {
	serverCA, clientCA := testca.New(t, "receiver-ca"), testca.New(t, "client-ca")
	recv := newMTLSReceiver(t, serverCA, clientCA)
	s, _ := newTestSender(t, Config{MaxTLSClients: 2})
	send := func(cn string) Result {
		p := clientCA.Client(t, cn)
		d := testDelivery(recv.URL)
		d.Retry.MaxAttempts = 1
		d.Webhook.TLS = &ejserver.WebhookTLS{CAPem: string(serverCA.CertPEM), ServerName: "receiver.internal",
			ClientCertPem: string(p.CertPEM), ClientKeyPem: string(p.KeyPEM)}
		return s.Deliver(context.Background(), d)
	}
	shared := clientCA.Client(t, "shared")
	for range 3 {
		d := testDelivery(recv.URL)
		d.Retry.MaxAttempts = 1
		d.Webhook.TLS = &ejserver.WebhookTLS{CAPem: string(serverCA.CertPEM), ServerName: "receiver.internal",
			ClientCertPem: string(shared.CertPEM), ClientKeyPem: string(shared.KeyPEM)}
		if res := s.Deliver(context.Background(), d); !res.Success {
			t.Fatalf("%+v", res)
		}
	}
	if kept, created := s.TLSClients(); kept != 1 || created != 1 {
		t.Fatalf("one setting three times: kept %d, created %d; want 1, 1", kept, created)
	}
	for _, cn := range []string{"a", "b", "c"} {
		if res := send(cn); !res.Success {
			t.Fatalf("%s: %+v", cn, res)
		}
	}
	if kept, created := s.TLSClients(); kept != 2 || created != 4 {
		t.Fatalf("four settings: kept %d, created %d; want 2 kept (the bound), 4 created", kept, created)
	}

	d := testDelivery(recv.URL)
	d.Webhook.TLS = &ejserver.WebhookTLS{CAPem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}
	res := s.Deliver(context.Background(), d)
	if res.Success || !res.Permanent || res.Attempts != 0 || !strings.Contains(res.FailureCause, "webhook.tls.caPem") ||
		strings.Contains(res.FailureCause, "AAAA") {
		t.Fatalf("a bad stored CA: %+v", res)
	}
}
