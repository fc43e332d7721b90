package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

const testBody = `{"jobName":"settle","taskId":"t","executionId":"e-1","shardingItem":2,"shardingParameter":"Guangzhou",` +
	`"shardingTotalCount":4,"jobParameter":"batch=500","source":"NORMAL_TRIGGER","scheduledAt":"2026-11-21T10:00:00Z",` +
	`"attempt":1,"instanceId":"10.0.0.7@-@4242"}`

func signed(id, body string) *http.Request {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(testSecret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + body))
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("webhook-id", id)
	r.Header.Set("webhook-timestamp", ts)
	r.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return r
}

func TestReceiverPrintsOneLinePerDelivery(t *testing.T) {
	var out bytes.Buffer
	p := &printer{out: &out, now: func() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 12e6, time.UTC) }}
	h := newHandler(p, testSecret, 0, nil)

	for _, r := range []*http.Request{signed("e-1", testBody), signed("e-1", testBody)} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	bad := signed("e-2", testBody)
	bad.Header.Set("webhook-signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, bad)
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d", w.Code)
	}

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	want := `10:00:00.012 ✓ settle       item 2/4    "Guangzhou"    NORMAL_TRIGGER attempt 1  jobParameter "batch=500"  id e-1`
	if lines[0] != want {
		t.Errorf("delivery line\n got %q\nwant %q", lines[0], want)
	}
	if !strings.Contains(lines[1], "↺") || !strings.Contains(lines[1], "duplicate") {
		t.Errorf("duplicate line %q", lines[1])
	}
	if !strings.Contains(lines[2], "rejected") || !strings.Contains(lines[2], "401") {
		t.Errorf("rejection line %q", lines[2])
	}
}

func TestFailRateAnswers500SoEjserverRetries(t *testing.T) {
	var out bytes.Buffer
	p := &printer{out: &out, now: time.Now}
	h := newHandler(p, "", 0.5, func() float64 { return 0.1 })
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(testBody)))
	if w.Code != http.StatusInternalServerError || !strings.Contains(out.String(), "simulated failure") {
		t.Fatalf("status %d, output %q", w.Code, out.String())
	}
}
