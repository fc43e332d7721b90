package ejserver

import (
	"crypto/sha256"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/ejserver/ejserver/internal/certs"
)

// Limits of webhook.tls.
const (
	MaxCAPemBytes         = 64 << 10
	MaxClientCertPemBytes = 32 << 10
	MaxClientKeyPemBytes  = 16 << 10
)

// WebhookTLS is how a job's webhook requests speak TLS to a private receiver: the CA that signed the
// receiver's certificate, a client certificate for a receiver (or its gateway) that demands one (mTLS), and a
// server name to check the receiver's certificate against when the URL's host is not in it.
type WebhookTLS struct {
	// CAPem is a PEM CA bundle that verifies the receiver's certificate instead of the system's roots.
	CAPem string `json:"caPem,omitempty"`
	// ClientCertPem is a PEM client certificate (chain), presented when the receiver asks for one.
	ClientCertPem string `json:"clientCertPem,omitempty"`
	// ClientKeyPem is write-only, like webhook.secret: the PEM private key of ClientCertPem. It never appears
	// in responses, logs or the registry dump; on replace, an absent key keeps the stored one, "" removes it.
	ClientKeyPem string `json:"clientKeyPem,omitempty"`
	// ServerName overrides the name the receiver's certificate must hold (default: the URL's host).
	ServerName string `json:"serverName,omitempty"`
	// keySet records, after decoding a request, whether "clientKeyPem" was present at all.
	keySet bool
}

// webhookTLSJSON is WebhookTLS as it is written to clients: the key only as whether one is set.
type webhookTLSJSON struct {
	CAPem         string `json:"caPem,omitempty"`
	ClientCertPem string `json:"clientCertPem,omitempty"`
	ServerName    string `json:"serverName,omitempty"`
	HasClientKey  bool   `json:"hasClientKey"`
}

// MarshalJSON never writes the client key.
func (t WebhookTLS) MarshalJSON() ([]byte, error) {
	return json.Marshal(webhookTLSJSON{CAPem: t.CAPem, ClientCertPem: t.ClientCertPem, ServerName: t.ServerName,
		HasClientKey: t.ClientKeyPem != ""})
}

// UnmarshalJSON reads the writable fields and whether "clientKeyPem" was given; hasClientKey, copied from a
// GET, is accepted and ignored.
func (t *WebhookTLS) UnmarshalJSON(b []byte) error {
	var v struct {
		CAPem         *string `json:"caPem"`
		ClientCertPem *string `json:"clientCertPem"`
		ClientKeyPem  *string `json:"clientKeyPem"`
		ServerName    *string `json:"serverName"`
		HasClientKey  bool    `json:"hasClientKey"`
	}
	if err := decodeStrict(b, &v); err != nil {
		return nestedError("tls", err)
	}
	setIf(&t.CAPem, v.CAPem)
	setIf(&t.ClientCertPem, v.ClientCertPem)
	setIf(&t.ServerName, v.ServerName)
	if v.ClientKeyPem != nil {
		t.ClientKeyPem, t.keySet = *v.ClientKeyPem, true
	}
	return nil
}

// KeyGiven reports whether the decoded request carried "clientKeyPem" (even an empty one).
func (t WebhookTLS) KeyGiven() bool { return t.keySet || t.ClientKeyPem != "" }

// Empty reports whether nothing is set: the webhook then uses the system's roots and no client certificate.
func (t WebhookTLS) Empty() bool {
	return t.CAPem == "" && t.ClientCertPem == "" && t.ClientKeyPem == "" && t.ServerName == ""
}

// Fingerprint identifies the settings (the key included) without holding them: equal settings, equal
// fingerprints. The webhook sender keys its cache of TLS transports with it.
func (t WebhookTLS) Fingerprint() [sha256.Size]byte {
	h := sha256.New()
	for _, s := range []string{t.CAPem, t.ClientCertPem, t.ClientKeyPem, t.ServerName} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// KeepKey fills an absent client key from stored (absent on replace = keep) when a client certificate is
// given; the rest of stored is ignored.
func (t *WebhookTLS) KeepKey(stored *WebhookTLS) {
	if t != nil && stored != nil && !t.KeyGiven() && t.ClientCertPem != "" {
		t.ClientKeyPem = stored.ClientKeyPem
	}
}

// MergeTLS applies replace's rules for webhook.tls to cfg, given the stored webhook: an absent "tls" keeps
// the stored settings, null or {} removes them, an object replaces them with its absent clientKeyPem kept.
func (w *Webhook) MergeTLS(stored Webhook) {
	if !w.TLSGiven() {
		w.TLS = stored.TLS
		return
	}
	w.TLS.KeepKey(stored.TLS)
}

// validateTLS checks webhook.tls: each PEM parses, the key matches the certificate, the pair comes together,
// the URL is https. Messages never quote the PEMs.
func (v *validator) validateTLS(w Webhook) {
	t := w.TLS
	if t == nil {
		return
	}
	if u, err := url.Parse(w.URL); err == nil && u.Scheme != "https" && !t.Empty() {
		v.add("webhook.tls", "needs an https:// webhook.url")
	}
	if t.CAPem != "" {
		if len(t.CAPem) > MaxCAPemBytes {
			v.add("webhook.tls.caPem", "is %d bytes long; the limit is %d", len(t.CAPem), MaxCAPemBytes)
		} else if _, err := certs.ParsePool([]byte(t.CAPem)); err != nil {
			v.add("webhook.tls.caPem", "is not a PEM CA bundle: %v", err)
		}
	}
	switch {
	case t.ClientCertPem != "" && t.ClientKeyPem == "":
		v.add("webhook.tls.clientKeyPem", "is needed with clientCertPem")
	case t.ClientCertPem == "" && t.ClientKeyPem != "":
		v.add("webhook.tls.clientCertPem", "is needed with clientKeyPem")
	case len(t.ClientCertPem) > MaxClientCertPemBytes:
		v.add("webhook.tls.clientCertPem", "is %d bytes long; the limit is %d", len(t.ClientCertPem), MaxClientCertPemBytes)
	case len(t.ClientKeyPem) > MaxClientKeyPemBytes:
		v.add("webhook.tls.clientKeyPem", "is %d bytes long; the limit is %d", len(t.ClientKeyPem), MaxClientKeyPemBytes)
	case t.ClientCertPem != "":
		if _, err := certs.ParseKeyPair([]byte(t.ClientCertPem), []byte(t.ClientKeyPem)); err != nil {
			field := "webhook.tls.clientCertPem"
			if strings.Contains(err.Error(), "key") {
				field = "webhook.tls.clientKeyPem"
			}
			v.add(field, "%v", err)
		}
	}
	if t.ServerName != "" && (len(t.ServerName) > 253 || strings.ContainsAny(t.ServerName, " /:\t\r\n") || !isPrintable(t.ServerName)) {
		v.add("webhook.tls.serverName", "must be a host name of at most 253 characters")
	}
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x21 || r > 0x7e {
			return false
		}
	}
	return true
}
