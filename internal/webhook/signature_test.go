package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/receiver"
)

// The Standard Webhooks spec's own signing vector, from the official libraries' tests:
// github.com/standard-webhooks/standard-webhooks, libraries/go/webhook_test.go (TestWebhookSign) and
// libraries/javascript/src/webhook.test.ts ("sign function works").
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignStandardWebhooksVector(t *testing.T) {
	key, err := ParseSecret(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := Sign(key, vectorMsgID, vectorTimestamp, []byte(vectorPayload)); got != vectorSignature {
		t.Fatalf("Sign = %s, want %s", got, vectorSignature)
	}
	h, err := SignatureHeader([]string{vectorSecret}, vectorMsgID, vectorTimestamp, []byte(vectorPayload))
	if err != nil || h != vectorSignature {
		t.Fatalf("SignatureHeader = %q, %v", h, err)
	}
	// And the receiver helper accepts it (at the vector's own time).
	hdr := http.Header{}
	hdr.Set("webhook-id", vectorMsgID)
	hdr.Set("webhook-timestamp", "1614265330")
	hdr.Set("webhook-signature", vectorSignature)
	if err := receiver.VerifyAt(vectorSecret, hdr, []byte(vectorPayload), time.Unix(vectorTimestamp, 0), receiver.DefaultTolerance); err != nil {
		t.Fatalf("receiver.VerifyAt: %v", err)
	}
}

func TestGenerateSecret(t *testing.T) {
	a, b := GenerateSecret(), GenerateSecret()
	if a == b || !strings.HasPrefix(a, SecretPrefix) {
		t.Fatalf("secrets %q %q", a, b)
	}
	key, err := ParseSecret(a)
	if err != nil || len(key) != 32 {
		t.Fatalf("ParseSecret(GenerateSecret()) = %d bytes, %v", len(key), err)
	}
}

func TestParseSecret(t *testing.T) {
	tests := []struct {
		name, secret string
		ok           bool
	}{
		{"generated", GenerateSecret(), true},
		{"spec vector (24 bytes)", vectorSecret, true},
		{"no prefix", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false},
		{"not base64", "whsec_not*base64", false},
		{"too short", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 16)), false},
		{"too long", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)), false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		_, err := ParseSecret(tt.secret)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v", tt.name, err)
		}
		if err != nil && (!errors.Is(err, ErrInvalidSecret) || (len(tt.secret) > 8 && strings.Contains(err.Error(), tt.secret[6:]))) {
			t.Errorf("%s: error %q must wrap ErrInvalidSecret and not show the secret", tt.name, err)
		}
	}
}

func TestReceiverVerifiesWhatTheSenderSigns(t *testing.T) {
	oldSecret, newSecret := GenerateSecret(), GenerateSecret()
	rec := newRecorder(t, status(200))
	s, clk := newTestSender(t, Config{})
	d := testDelivery(rec.URL)
	d.Webhook.Secret = newSecret
	d.Webhook.PreviousSecret = oldSecret
	d.Webhook.PreviousSecretExpiresAt = clk.Now().Add(time.Hour)

	if res := s.Deliver(context.Background(), d); !res.Success {
		t.Fatalf("result = %+v", res)
	}
	clk.Advance(2 * time.Hour) // the grace period is over
	if res := s.Deliver(context.Background(), d); !res.Success {
		t.Fatalf("result = %+v", res)
	}
	reqs := rec.requests()
	during, after := reqs[0], reqs[1]

	if sigs := strings.Fields(during.header.Get("Webhook-Signature")); len(sigs) != 2 {
		t.Fatalf("during rotation: %d signatures, want 2 (new and old)", len(sigs))
	}
	verify := func(secret string, r request, at time.Time) error {
		return receiver.VerifyAt(secret, r.header, r.body, at, receiver.DefaultTolerance)
	}
	start := clk.Now().Add(-2 * time.Hour)
	if err := verify(newSecret, during, start); err != nil {
		t.Errorf("new secret during rotation: %v", err)
	}
	if err := verify(oldSecret, during, start); err != nil {
		t.Errorf("old secret during rotation: %v", err)
	}
	if sigs := strings.Fields(after.header.Get("Webhook-Signature")); len(sigs) != 1 {
		t.Fatalf("after the grace period: %d signatures, want 1", len(sigs))
	}
	if err := verify(newSecret, after, clk.Now()); err != nil {
		t.Errorf("new secret after rotation: %v", err)
	}
	if err := verify(oldSecret, after, clk.Now()); !errors.Is(err, receiver.ErrNoMatch) {
		t.Errorf("old secret after the grace period: %v, want ErrNoMatch", err)
	}
	// A tampered body fails.
	if err := verify(newSecret, request{header: after.header, body: append(after.body, ' ')}, clk.Now()); err == nil {
		t.Error("a changed body verified")
	}
}

func TestSecretsAreNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := newRecorder(t, status(500))
	s, clk := newTestSender(t, Config{Logger: logger})
	secret := GenerateSecret()
	d := testDelivery(rec.URL)
	d.Webhook.Secret = secret
	res, _ := deliverAdvancing(t, s, clk, context.Background(), d)

	bad := "whsec_" + strings.Repeat("A", 20) + "*&^"
	d.Webhook.Secret = bad
	badRes := s.Deliver(context.Background(), d)
	if !badRes.Permanent || badRes.Attempts != 0 || !strings.Contains(badRes.FailureCause, "invalid webhook secret") {
		t.Fatalf("bad secret: result = %+v", badRes)
	}
	if logs.Len() == 0 {
		t.Fatal("no logs: the test would prove nothing")
	}
	for _, leak := range []string{secret, secret[len(SecretPrefix):], bad, bad[len(SecretPrefix):]} {
		for where, text := range map[string]string{"logs": logs.String(), "cause": res.FailureCause + badRes.FailureCause} {
			if strings.Contains(text, leak) {
				t.Fatalf("a secret appears in the %s:\n%s", where, text)
			}
		}
	}
}

func TestDeliveryLogValueHidesSecrets(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	d := testDelivery("http://127.0.0.1:1/hook")
	d.Webhook.Secret = GenerateSecret()
	d.Webhook.PreviousSecret = GenerateSecret()
	d.Webhook.Headers = map[string]string{"Authorization": "Bearer hunter2"}
	logger.Info("delivering", "delivery", d)
	for _, leak := range []string{d.Webhook.Secret[6:], d.Webhook.PreviousSecret[6:], "hunter2"} {
		if strings.Contains(logs.String(), leak) {
			t.Fatalf("log line leaks %q: %s", leak, logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"execution_id":"`+testExecutionID+`"`) {
		t.Fatalf("log line lacks the execution id: %s", logs.String())
	}
}
