package api

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver/internal/certs"
	"github.com/ejserver/ejserver/internal/testutil/testca"
)

// A client certificate verified at the TLS handshake reaches the echo context as ClientCertNameKey, on the
// way to the token check; a request without one carries no name.
func TestClientCertNameReachesTheContext(t *testing.T) {
	serverCA, clientCA := testca.New(t, "server-ca"), testca.New(t, "client-ca")
	srvPair := serverCA.Loopback(t, "api")
	srvCert, err := tls.X509KeyPair(srvPair.CertPEM, srvPair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	clientPool := x509.NewCertPool()
	clientPool.AddCert(clientCA.Cert)

	seen := make(chan string, 1)
	capture := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			name, _ := c.Get(ClientCertNameKey).(string)
			seen <- name
			return next(c)
		}
	}
	h := New(Config{Service: &fakeService{}, Tokens: testTokens(t), Middleware: []echo.MiddlewareFunc{capture}})
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = certs.ServerConfig(nil, clientPool)
	srv.TLS.Certificates = []tls.Certificate{srvCert} // httptest would put its own there
	srv.StartTLS()
	defer srv.Close()

	rootPool := x509.NewCertPool()
	rootPool.AddCert(serverCA.Cert)
	tests := []struct {
		name  string
		cert  *testca.Pair
		token string
		want  string
	}{
		{"no certificate", nil, adminSecret, ""},
		{"common name", ptr(clientCA.Client(t, "ci-bot")), adminSecret, "ci-bot"},
		{"dns name first", ptr(clientCA.Issue(t, testca.Names{CommonName: "cn", DNS: []string{"deploy.payments"}, Client: true})), adminSecret, "deploy.payments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &tls.Config{RootCAs: rootPool, MinVersion: tls.VersionTLS12}
			if tt.cert != nil {
				pair, err := tls.X509KeyPair(tt.cert.CertPEM, tt.cert.KeyPEM)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Certificates = []tls.Certificate{pair}
			}
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
			defer hc.CloseIdleConnections()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/jobs", nil)
			req.Header.Set("Authorization", "Bearer "+tt.token)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := <-seen; got != tt.want {
				t.Fatalf("%s = %q, want %q", ClientCertNameKey, got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
