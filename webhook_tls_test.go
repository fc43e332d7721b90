package ejserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ejserver/ejserver/internal/testutil/testca"
)

func tlsJob(t *testing.T) (JobConfig, testca.Pair, *testca.CA) {
	t.Helper()
	ca := testca.New(t, "receiver-ca")
	client := ca.Client(t, "ejserver")
	c := validJob()
	c.Webhook.TLS = &WebhookTLS{CAPem: string(ca.CertPEM), ClientCertPem: string(client.CertPEM),
		ClientKeyPem: string(client.KeyPEM), ServerName: "hooks.internal"}
	return c, client, ca
}

func TestWebhookTLSValidation(t *testing.T) {
	good, client, ca := tlsJob(t)
	if err := good.Validate(); err != nil {
		t.Fatalf("a good webhook.tls: %v", err)
	}
	other := ca.Client(t, "other")
	tests := []struct {
		name  string
		mod   func(*WebhookTLS, *Webhook)
		field string
	}{
		{"ca not pem", func(t *WebhookTLS, _ *Webhook) { t.CAPem = "junk" }, "webhook.tls.caPem"},
		{"ca is a key", func(t *WebhookTLS, _ *Webhook) { t.CAPem = string(client.KeyPEM) }, "webhook.tls.caPem"},
		{"ca too long", func(t *WebhookTLS, _ *Webhook) { t.CAPem = strings.Repeat("a", MaxCAPemBytes+1) }, "webhook.tls.caPem"},
		{"cert without key", func(t *WebhookTLS, _ *Webhook) { t.ClientKeyPem = "" }, "webhook.tls.clientKeyPem"},
		{"key without cert", func(t *WebhookTLS, _ *Webhook) { t.ClientCertPem = "" }, "webhook.tls.clientCertPem"},
		{"key of another cert", func(t *WebhookTLS, _ *Webhook) { t.ClientKeyPem = string(other.KeyPEM) }, "webhook.tls.clientKeyPem"},
		{"cert not pem", func(t *WebhookTLS, _ *Webhook) { t.ClientCertPem = "junk" }, "webhook.tls.clientCertPem"},
		{"key not pem", func(t *WebhookTLS, _ *Webhook) { t.ClientKeyPem = "junk" }, "webhook.tls.clientKeyPem"},
		{"server name with a port", func(t *WebhookTLS, _ *Webhook) { t.ServerName = "a:443" }, "webhook.tls.serverName"},
		{"plain http url", func(_ *WebhookTLS, w *Webhook) { w.URL = "http://hooks.example.com/x" }, "webhook.tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := tlsJob(t)
			cp := *good.Webhook.TLS
			c.Webhook.TLS = &cp
			tt.mod(c.Webhook.TLS, &c.Webhook)
			err := c.Validate()
			var e *Error
			if !errors.As(err, &e) || len(e.Fields) == 0 || e.Fields[0].Field != tt.field {
				t.Fatalf("err = %v, want a field error on %s", err, tt.field)
			}
			if strings.Contains(err.Error(), "-----") {
				t.Fatalf("the error quotes a PEM: %v", err)
			}
		})
	}
}

func TestWebhookTLSKeyIsWriteOnly(t *testing.T) {
	c, client, _ := tlsJob(t)
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "PRIVATE KEY") || strings.Contains(string(out), "clientKeyPem") {
		t.Fatalf("the key is in the JSON: %s", out)
	}
	if !strings.Contains(string(out), `"hasClientKey":true`) || !strings.Contains(string(out), `"serverName":"hooks.internal"`) {
		t.Fatalf("the JSON lacks the readable fields: %s", out)
	}
	// a GET body PUT back: the key is absent, so it is kept; the read-only hasClientKey is accepted
	back, err := DecodeJobConfig(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if !back.Webhook.TLSGiven() || back.Webhook.TLS.KeyGiven() {
		t.Fatalf("tls given %v, key given %v", back.Webhook.TLSGiven(), back.Webhook.TLS.KeyGiven())
	}
	back.Webhook.MergeTLS(c.Webhook)
	if back.Webhook.TLS.ClientKeyPem != string(client.KeyPEM) {
		t.Fatal("an absent key was not kept")
	}
	tests := []struct {
		name    string
		body    string
		wantTLS bool
		wantKey bool
	}{
		{"absent tls keeps it", `{"url":"https://x"}`, true, true},
		{"null removes it", `{"url":"https://x","tls":null}`, false, false},
		{"a new ca alone drops the client certificate", `{"url":"https://x","tls":{"caPem":"x"}}`, true, false},
		{"an empty key removes it", `{"url":"https://x","tls":{"clientCertPem":"c","clientKeyPem":""}}`, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w Webhook
			if err := json.Unmarshal([]byte(tt.body), &w); err != nil {
				t.Fatal(err)
			}
			w.MergeTLS(c.Webhook)
			if (w.TLS != nil) != tt.wantTLS || w.TLS != nil && (w.TLS.ClientKeyPem != "") != tt.wantKey {
				t.Fatalf("tls %+v; want tls %v, key %v", w.TLS, tt.wantTLS, tt.wantKey)
			}
		})
	}
	var w Webhook
	err = json.Unmarshal([]byte(`{"tls":{"caPem":"x","bogus":1}}`), &w)
	var e *Error
	if !errors.As(err, &e) || !strings.HasPrefix(e.Fields[0].Field, "webhook.tls") {
		t.Fatalf("an unknown tls field: %v", err)
	}
}

func TestWebhookTLSYAMLRoundTrip(t *testing.T) {
	c, _, _ := tlsJob(t)
	y, err := MarshalElasticJobYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseElasticJobYAML(y)
	if err != nil {
		t.Fatal(err)
	}
	if back.Webhook.TLS == nil || *back.Webhook.TLS != *c.Webhook.TLS {
		t.Fatalf("round trip: %+v\nwant %+v", back.Webhook.TLS, c.Webhook.TLS)
	}
	c.Webhook.TLS = nil
	y, _ = MarshalElasticJobYAML(c)
	if back, _ = ParseElasticJobYAML(y); back.Webhook.TLS != nil || strings.Contains(string(y), "tls") {
		t.Fatalf("no tls: %+v\n%s", back.Webhook.TLS, y)
	}
}
