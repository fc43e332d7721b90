package cluster

import (
	"strings"
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil/testca"
)

// The dump never shows a secret: the webhook secrets and webhook.tls's client key, a multi-line PEM included.
func TestRedactPropsHidesMultiLineKeys(t *testing.T) {
	ca := testca.New(t, "ca")
	pair := ca.Client(t, "c")
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount = "j", 1
	cfg.Webhook.URL = "https://x/"
	cfg.Webhook.Secret = "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"
	cfg.Webhook.TLS = &ejserver.WebhookTLS{CAPem: string(ca.CertPEM), ClientCertPem: string(pair.CertPEM), ClientKeyPem: string(pair.KeyPEM)}
	y, err := ejserver.MarshalElasticJobYAML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := redactProps("/ns/j/config", y, "/ns/j/config")
	keyBody := strings.Split(strings.TrimSpace(string(pair.KeyPEM)), "\n")[1]
	switch {
	case strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, keyBody):
		t.Fatalf("the dump shows the client key:\n%s", out)
	case strings.Contains(out, "c2VjcmV0"):
		t.Fatalf("the dump shows the secret:\n%s", out)
	case !strings.Contains(out, ejserver.PropTLSClientKey+": '******'") || !strings.Contains(out, "BEGIN CERTIFICATE"):
		t.Fatalf("the dump lost what it should show:\n%s", out)
	case !strings.Contains(out, "shardingTotalCount: 1"):
		t.Fatalf("the lines after the key were dropped:\n%s", out)
	}
	if got := redactProps("/ns/j/sharding", y, "/ns/j/config"); got != string(y) {
		t.Fatal("a node other than the config was changed")
	}
}
